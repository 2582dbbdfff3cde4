// Protocol of the KV transfer worker, which moves a sequence's KV from one device's pool to
// another's (prefill -> decode, decode -> offload) through kv_codec (the byte stream a host copy, a GPU link or a network hop carries):
//   (transfer_atom, transfer_job) -> transfer_done
// Both handles travel with the job and come back in the reply (ownership moves with them); a
// refused stream (corrupted, truncated, wrong shape) is a reply with `error` set and `to`
// unchanged, so the scheduler recomputes the prompt instead of losing the request.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>

#include "actors/protocol/atoms.hpp"
#include "actors/protocol/runtime_inspect.hpp"
#include "runtime/sched/worker_messages.hpp"

// Inspectors of the runtime values this protocol carries (found by ADL in namespace fw).
namespace fw {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transfer_job& x) {
  return f(caf::meta::type_name("fw::actors::transfer_job"), x.id, x.from, x.to, x.wire);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transfer_done& x) {
  return f(caf::meta::type_name("fw::actors::transfer_done"), x.id, x.from, x.to, x.bytes, x.f32_bytes, x.ms, x.error);
}

}  // namespace fw

namespace fw::actors {

// The runtime values this protocol carries, by their protocol names too.
using fw::transfer_job;
using fw::transfer_done;



using transfer_actor = caf::typed_actor<caf::replies_to<transfer_atom, transfer_job>::with<transfer_done>>;

inline void add_transfer_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<transfer_job>("fw::actors::transfer_job");
  cfg.add_message_type<transfer_done>("fw::actors::transfer_done");
  cfg.add_message_type<transfer_actor>("fw::actors::transfer_actor");
}

}  // namespace fw::actors
