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
#include "runtime/sched/worker_messages.hpp"

// Inspectors of the runtime values this protocol carries (found by ADL in namespace fw).
namespace fw {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prefill_job& x) {
  return f(caf::meta::type_name("fw::actors::prefill_job"), x.id, x.tokens, x.kv, x.chunk, x.prompt_logprobs, x.next_token,
           x.cached);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prefill_done& x) {
  return f(caf::meta::type_name("fw::actors::prefill_done"), x.id, x.kv, x.ms, x.attention_entropy, x.done_s, x.chunks, x.rows,
           x.prompt_logprobs);
}

}  // namespace fw

namespace fw::actors {

// The runtime values this protocol carries, by their protocol names too.
using fw::prefill_job;
using fw::prefill_done;



using prefill_actor = caf::typed_actor<caf::replies_to<prefill_atom, prefill_job>::with<prefill_done>>;

inline void add_prefill_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<prefill_job>("fw::actors::prefill_job");
  cfg.add_message_type<prefill_done>("fw::actors::prefill_done");
  cfg.add_message_type<prefill_actor>("fw::actors::prefill_actor");
}

}  // namespace fw::actors
