// Sampling parameters the tests use again and again.
#pragma once

#include "runtime/sampling_params.hpp"

namespace fw::test {

/// Greedy decoding of exactly n tokens (EOS does not stop it), the setting every exactness test
/// compares under.
inline sampling_params greedy(int n) {
  sampling_params p;
  p.temperature = 0;
  p.max_tokens = n;
  p.ignore_eos = true;
  return p;
}

}  // namespace fw::test
