// Protocol of the supervisor, which spawns the workers (detached, monitored) and restarts any
// that dies, telling the scheduler at once (lost_atom) and again when the replacement runs
// (worker_atom):
//   (init_atom) -> ok_atom          start the workers (the reply comes once the scheduler has them)
//   (shutdown_atom)                 stop the workers without restarting them
//   (stats_atom) -> uint64_t        workers restarted so far
//   (health_atom) -> worker_health  restarts, escalations and state of each worker
//   (worker_atom, uint8_t kind)     its own timer: restart that worker (worker_kind) now
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actors/protocol/atoms.hpp"

namespace fw::actors {

/// One line per worker the supervisor runs.
struct worker_health {
  std::vector<std::string> names;     ///< "prefill", "fallback", "transfer", "decode", "offload"
  std::vector<uint64_t> crashes;
  std::vector<uint64_t> escalations;  ///< times its device was marked down
  std::vector<std::string> states;    ///< "running", "restarting", "down"
  std::vector<std::string> last_reason;
};

using supervisor_actor = caf::typed_actor<caf::replies_to<init_atom>::with<ok_atom>, caf::reacts_to<shutdown_atom>,
                                          caf::replies_to<stats_atom>::with<uint64_t>,
                                          caf::replies_to<health_atom>::with<worker_health>,
                                          caf::reacts_to<worker_atom, uint8_t>>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_health& x) {
  return f(caf::meta::type_name("fw::actors::worker_health"), x.names, x.crashes, x.escalations, x.states,
           x.last_reason);
}

inline void add_supervisor_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<worker_health>("fw::actors::worker_health");
  cfg.add_message_type<supervisor_actor>("fw::actors::supervisor_actor");
}

}  // namespace fw::actors
