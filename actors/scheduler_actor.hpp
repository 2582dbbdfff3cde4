// scheduler_actor: the mailbox of runtime/sched/scheduler, which holds every request's state and
// makes every decision (admission, routes, prefix cache, offload, failover, rollout, timeouts).
// This adapter turns each message into one call of the scheduler and each returned action into
// one message (a prefill or transfer request whose reply or failure becomes the next call, a
// decode job, an adopted sequence, a cancel, a failure to the front door). It keeps only the
// workers' mailbox handles and its timer. Protocol: actors/protocol/scheduler_protocol.hpp.
#pragma once

#include <caf/typed_event_based_actor.hpp>

#include <memory>

#include "actors/engine_context.hpp"
#include "actors/protocol/front_door_protocol.hpp"
#include "actors/protocol/scheduler_protocol.hpp"
#include "runtime/sched/scheduler.hpp"

namespace fw::actors {

struct scheduler_state {
  // CAF constructs a state from the actor pointer when it can; with C++20 aggregate
  // parenthesized init that would turn the pointer into the first member. Take it explicitly.
  explicit scheduler_state(caf::local_actor*) {}
  scheduler_state(const scheduler_state&) = delete;
  scheduler_state& operator=(const scheduler_state&) = delete;

  /// The request state machine; destroyed with the actor (the engine awaits its actors before
  /// it destroys the devices whose pools the scheduler holds).
  std::unique_ptr<fw::scheduler> core;
  front_door_actor front_door;
  prefill_actor prefill;   ///< on the prefill device (the only one when co-located)
  prefill_actor fallback;  ///< separate devices: prefill on the decode device (co-located route)
  transfer_actor transfer; ///< moves KV between the pools
  decode_actor decode;
  decode_actor offload;    ///< with an offload device: its decode worker
  static inline const char* name = "fw.scheduler";
};

/// The scheduler's setup from one engine's context (pools, model sizes, limits).
fw::scheduler::setup scheduler_setup_of(const engine_context& ctx);

scheduler_actor::behavior_type scheduler(scheduler_actor::stateful_pointer<scheduler_state> self,
                                         const engine_context* ctx, front_door_actor front_door);

}  // namespace fw::actors
