// Protocol of the prefill actor: run a request's prompt into its KV handle.
//   request  (prefill_atom, prefill_job)  -> reply prefill_done
// The job's handle is owned by the prefill actor until it replies; the reply hands it back.
// The prefill stops one token short of the prompt: the decode actor feeds the last prompt token
// in its first batched step, which yields the first generated token without moving logits.
#pragma once

#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <vector>

#include "actors/runtime_inspect.hpp"

namespace fw::actors {

using prefill_atom = caf::atom_constant<caf::atom("prefill")>;

struct prefill_job {
  uint64_t id = 0;
  std::vector<int32_t> tokens;  ///< tokens to write, starting at position kv.n_tokens
  kv_handle kv;
};

struct prefill_done {
  uint64_t id = 0;
  kv_handle kv;
  double ms = 0;  ///< time spent in forward passes
  float attention_entropy = -1;  ///< of the last prefilled row's last layer; < 0: unknown
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prefill_job& x) {
  return f(caf::meta::type_name("fw::actors::prefill_job"), x.id, x.tokens, x.kv);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prefill_done& x) {
  return f(caf::meta::type_name("fw::actors::prefill_done"), x.id, x.kv, x.ms, x.attention_entropy);
}

}  // namespace fw::actors
