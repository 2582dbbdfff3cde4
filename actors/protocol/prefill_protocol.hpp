// Protocol of the prefill worker: run a request's prompt into its KV handle.
//   (prefill_atom, prefill_job) -> prefill_done     errors: a flywheel caf::error (errc_error.hpp)
// The job's handle is owned by the prefill worker until it replies; the reply hands it back.
// The prefill stops one token short of the prompt: the decode worker feeds the last prompt token
// in its first batched step, which yields the first generated token without moving logits.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <vector>

#include "actors/protocol/atoms.hpp"
#include "actors/protocol/runtime_inspect.hpp"

namespace fw::actors {

struct prefill_job {
  uint64_t id = 0;
  std::vector<int32_t> tokens;  ///< tokens to write, starting at position kv.n_tokens
  kv_handle kv;
  uint32_t chunk = 0;  ///< prompt rows per forward; 0: [scheduler] prefill_chunk
};

struct prefill_done {
  uint64_t id = 0;
  kv_handle kv;
  double ms = 0;  ///< time spent in forward passes
  float attention_entropy = -1;  ///< of the last prefilled row's last layer; < 0: unknown
  double done_s = 0;  ///< steady-clock seconds when the prefill finished (prefill-to-decode latency)
  uint32_t chunks = 0;  ///< forward passes the prompt took
  uint32_t rows = 0;    ///< prompt rows they ran
};

using prefill_actor = caf::typed_actor<caf::replies_to<prefill_atom, prefill_job>::with<prefill_done>>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prefill_job& x) {
  return f(caf::meta::type_name("fw::actors::prefill_job"), x.id, x.tokens, x.kv, x.chunk);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prefill_done& x) {
  return f(caf::meta::type_name("fw::actors::prefill_done"), x.id, x.kv, x.ms, x.attention_entropy, x.done_s, x.chunks, x.rows);
}

inline void add_prefill_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<prefill_job>("fw::actors::prefill_job");
  cfg.add_message_type<prefill_done>("fw::actors::prefill_done");
  cfg.add_message_type<prefill_actor>("fw::actors::prefill_actor");
}

}  // namespace fw::actors
