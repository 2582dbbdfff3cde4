// Protocol of the supervisor, which spawns the workers (detached, monitored) and restarts any
// that dies, telling the scheduler at once (lost_atom) and again when the replacement runs
// (worker_atom):
//   (init_atom) -> ok_atom          start the workers (the reply comes once the scheduler has them)
//   (shutdown_atom)                 stop the workers without restarting them
//   (stats_atom) -> uint64_t        workers restarted so far
//   (health_atom) -> worker_health  restarts, escalations and state of each worker
//   (worker_atom, uint8_t kind)     its own timer: restart that worker (worker_kind) now
//   (drill_atom, telemetry_drill)   replay a telemetry trace into the degradation policy
//   (telemetry_atom, telemetry_moment)  samples of one moment (a poll, or a drill's line group)
//   (tick_atom)                     its own timer: poll the CPU thermal sensors
// Each degradation decision goes to the scheduler (degrade_atom, state, reason) and, as a k cap,
// to the decode worker (degrade_atom, cap).
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actors/protocol/atoms.hpp"
#include "actors/protocol/runtime_inspect.hpp"

namespace fw::actors {

/// One line per worker the supervisor runs.
struct worker_health {
  std::vector<std::string> names;     ///< "prefill", "fallback", "transfer", "decode", "offload"
  std::vector<uint64_t> crashes;
  std::vector<uint64_t> escalations;  ///< times its device was marked down
  std::vector<std::string> states;    ///< "running", "restarting", "down"
  std::vector<std::string> last_reason;
  std::string degradation = "healthy";  ///< the degradation_state now
  std::string degradation_reason;
  std::vector<std::string> transitions;  ///< "t=3.0s healthy -> link-degraded: prefill at 80 C"
  uint64_t transitions_total = 0;
  std::vector<telemetry_sample> readings;  ///< the latest value of each device metric
  std::string telemetry;                   ///< where telemetry comes from (or why none)
};

/// A trace to replay: samples in time order, played at `speed` times their own pace.
struct telemetry_drill {
  std::vector<telemetry_sample> samples;
  double speed = 1;
};

/// Samples taken at one moment.
struct telemetry_moment {
  std::vector<telemetry_sample> samples;
};

using supervisor_actor = caf::typed_actor<caf::replies_to<init_atom>::with<ok_atom>, caf::reacts_to<shutdown_atom>,
                                          caf::replies_to<stats_atom>::with<uint64_t>,
                                          caf::replies_to<health_atom>::with<worker_health>,
                                          caf::reacts_to<worker_atom, uint8_t>,
                                          caf::replies_to<drill_atom, telemetry_drill>::with<ok_atom>,
                                          caf::reacts_to<telemetry_atom, telemetry_moment>, caf::reacts_to<tick_atom>>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_health& x) {
  return f(caf::meta::type_name("fw::actors::worker_health"), x.names, x.crashes, x.escalations, x.states,
           x.last_reason, x.degradation, x.degradation_reason, x.transitions, x.transitions_total, x.readings,
           x.telemetry);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, telemetry_drill& x) {
  return f(caf::meta::type_name("fw::actors::telemetry_drill"), x.samples, x.speed);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, telemetry_moment& x) {
  return f(caf::meta::type_name("fw::actors::telemetry_moment"), x.samples);
}

inline void add_supervisor_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<worker_health>("fw::actors::worker_health");
  cfg.add_message_type<telemetry_sample>("fw::telemetry_sample");
  cfg.add_message_type<telemetry_drill>("fw::actors::telemetry_drill");
  cfg.add_message_type<telemetry_moment>("fw::actors::telemetry_moment");
  cfg.add_message_type<supervisor_actor>("fw::actors::supervisor_actor");
}

}  // namespace fw::actors
