// health_report: the console's text for the supervisor's view (`:health`, `:drill`): each
// worker's state and crashes, the degradation state with its reason and recent transitions, the
// latest telemetry readings and where telemetry comes from; the staged rollout (`:rollout`).
// Pure formatting.
#pragma once

#include <string>

#include "actors/protocol/scheduler_protocol.hpp"
#include "actors/protocol/supervisor_protocol.hpp"

namespace fw::console {

std::string format_health(const actors::worker_health& h);
/// `:rollout`: the stage rolling out, its share, each stage's window and the breaker's decisions.
std::string format_rollout(const actors::scheduler_stats& s);

}  // namespace fw::console
