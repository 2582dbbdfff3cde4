// Sampling parameters the tests use again and again.
#pragma once

#include "runtime/sample/sampling_params.hpp"

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

/// Sampling at `temperature` with every filter off (pure softmax); with n > 0, exactly n tokens
/// (EOS does not stop it).
inline sampling_params unfiltered(float temperature, int n = 0) {
  sampling_params p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  if (n > 0) {
    p.max_tokens = n;
    p.ignore_eos = true;
  }
  return p;
}

}  // namespace fw::test
