// health_report: the console's text for the supervisor's view (`:health`, `:drill`): each
// worker's state and crashes, the degradation state with its reason and recent transitions, the
// latest telemetry readings and where telemetry comes from. Pure formatting.
#pragma once

#include <string>

#include "actors/protocol/supervisor_protocol.hpp"

namespace fw::console {

std::string format_health(const actors::worker_health& h);

}  // namespace fw::console
