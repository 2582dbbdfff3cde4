// supervisor_actor: spawns the worker actors (prefill, decode and, for separate prefill and
// decode devices, the co-located fallback prefill and the KV transfer; with an offload device its
// decode worker: detached, monitored) and restarts any that dies. It tells the scheduler at once
// (lost_atom: the scheduler re-admits or re-routes what the worker held, so no request is lost)
// and restarts the worker after the backoff its restart_policy gives (runtime/supervise); a
// worker that keeps dying escalates: its device is marked down for [supervisor] down_s (a
// prefill device that is down leaves its prompts to the decode device's fallback worker). It also
// feeds device telemetry (CPU thermal zones, polled; or a replayed drill trace) to the
// degradation policy and applies each decision: the scheduler switches the KV wire to int8,
// routes co-located, or fails prefill-device jobs over; the decode worker caps speculation's k.
// Protocol: actors/protocol/supervisor_protocol.hpp.
#pragma once

#include <caf/typed_event_based_actor.hpp>

#include <array>
#include <memory>

#include "actors/engine_context.hpp"
#include "actors/protocol/decode_protocol.hpp"
#include "actors/protocol/front_door_protocol.hpp"
#include "actors/protocol/prefill_protocol.hpp"
#include "actors/protocol/scheduler_protocol.hpp"
#include "actors/protocol/supervisor_protocol.hpp"
#include "actors/protocol/transfer_protocol.hpp"
#include "runtime/supervise/degradation_policy.hpp"
#include "runtime/supervise/restart_policy.hpp"
#include "runtime/supervise/thermal_source.hpp"

namespace fw::actors {

struct supervisor_state {
  // CAF constructs a state from the actor pointer when it can; with C++20 aggregate
  // parenthesized init that would turn the pointer into the first member. Take it explicitly.
  explicit supervisor_state(caf::local_actor*) {}
  front_door_actor front_door;
  scheduler_actor scheduler;
  prefill_actor prefill;
  prefill_actor fallback;    ///< physical pair only: prefill on the decode device
  transfer_actor transfer;   ///< physical pair only
  decode_actor decode;
  decode_actor offload;      ///< with an offload device: its decode worker
  draft_actor draft;         ///< with speculation: the decode worker's draft
  static constexpr size_t kinds = 6;  ///< one per worker_kind
  std::array<restart_policy, kinds> policies;  // each default-constructed (explicit constructor)
  std::array<std::string, kinds> last_reason{};
  std::array<bool, kinds> down{};     ///< marked down (escalated), restart pending
  degradation_policy degradation;
  std::unique_ptr<thermal_source> thermal;  ///< polled every limits.telemetry_poll_s when available
  std::string telemetry;                    ///< what thermal found (or that there is nothing)
  std::vector<bool> feed_failing;           ///< per limits.telemetry_feeds: its last sample failed
  double started_s = 0;
  bool stopping = false;
  uint64_t restarts = 0;
  static inline const char* name = "fw.supervisor";
};

supervisor_actor::behavior_type supervisor(supervisor_actor::stateful_pointer<supervisor_state> self,
                                           const engine_context* ctx, front_door_actor front_door,
                                           scheduler_actor scheduler);

}  // namespace fw::actors
