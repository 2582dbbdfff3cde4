// health_report: the console's text for the supervisor's view (`:health`, `:drill`): each
// worker's state and crashes, the degradation state with its reason and recent transitions, the
// latest telemetry readings and where telemetry comes from; the staged rollout (`:rollout`); a
// decode node's prefill nodes (`:devices`).
// Pure formatting.
#pragma once

#include <string>
#include <vector>

#include "actors/node_board.hpp"
#include "actors/protocol/scheduler_protocol.hpp"
#include "actors/protocol/supervisor_protocol.hpp"

namespace fw::console {

std::string format_health(const actors::worker_health& h);
/// `:rollout`: the stage rolling out, its share, each stage's window and the breaker's decisions.
std::string format_rollout(const actors::scheduler_stats& s);
/// A decode node's prefill nodes ([node] peers): state, traffic, failovers, one line each.
std::string format_peers(const std::vector<actors::peer_report>& peers, uint64_t local_prefills);

}  // namespace fw::console
