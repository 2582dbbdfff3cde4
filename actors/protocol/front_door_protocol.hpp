// Protocol of the front door, the actor clients talk to:
//   (generate_atom, client_request, sink_actor)  start a request; events go to the sink
//   (cancel_atom, uint64_t id)                    cancel it (also when the sink dies)
//   (shutdown_atom)                               fail what is in flight, stop
//   (init_atom, scheduler_actor)                  wiring, before any request
//   (step_atom, step_batch)                       from the decode worker: tokens of one step
//   (fail_atom, request_failure)                  from the scheduler: a request failed
// The sink receives stream_event messages: any number of token events, then exactly one final
// event (done or error); the front door splits the decode worker's per-step batches per request.
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/protocol/atoms.hpp"
#include "actors/protocol/decode_protocol.hpp"
#include "actors/protocol/front_door_messages.hpp"
#include "actors/protocol/scheduler_protocol.hpp"

namespace fw::actors {

using front_door_actor = caf::typed_actor<
    caf::reacts_to<generate_atom, client_request, sink_actor>, caf::reacts_to<cancel_atom, uint64_t>,
    caf::reacts_to<shutdown_atom>, caf::reacts_to<init_atom, scheduler_actor>,
    caf::reacts_to<step_atom, step_batch>, caf::reacts_to<fail_atom, request_failure>>;

inline void add_front_door_types(caf::actor_system_config& cfg) {
  add_front_door_message_types(cfg);
  cfg.add_message_type<front_door_actor>("fw::actors::front_door_actor");
}

}  // namespace fw::actors
