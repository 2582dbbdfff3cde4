// Protocol of the supervisor, which spawns the prefill and decode workers (detached, monitored)
// and restarts any that dies, telling the scheduler which one was replaced and why:
//   (init_atom) -> ok_atom     start the workers (the reply comes once the scheduler has them)
//   (shutdown_atom)            stop the workers without restarting them
//   (stats_atom) -> uint64_t   workers restarted so far
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>

#include "actors/protocol/atoms.hpp"

namespace fw::actors {

using supervisor_actor = caf::typed_actor<caf::replies_to<init_atom>::with<ok_atom>, caf::reacts_to<shutdown_atom>,
                                          caf::replies_to<stats_atom>::with<uint64_t>>;

inline void add_supervisor_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<supervisor_actor>("fw::actors::supervisor_actor");
}

}  // namespace fw::actors
