// decode_actor: continuous batching on its device (spawned detached). Holds a batch_decoder;
// each step is one message to itself, so new sequences and cancels interleave between steps. A
// step that fails for some sequences (their KV cannot grow, a forward pass error) reports them
// to the scheduler with their errors and goes on with the others. If a step throws (tests:
// engine_faults), the worker dies; the scheduler releases what it held by epoch and the
// supervisor restarts it. Finished, failed and cancelled sequences' KV goes back to the scheduler
// (the pools' one owner). With an offload device, the scheduler's offload_policy picks long tails
// from the step reports and asks for them (offload_atom, id); the worker hands each over, and the
// scheduler moves its KV and gives it to the offload device's worker (the same code).
// Speculation: the decode worker is also the verifier. Each step it asks the draft actor for the
// planned sequences' proposals (the k policy and gate stay here), verifies them in the step's one
// forward, rolls back rejected KV and sends the draft actor the verdicts.
// Protocol: actors/protocol/decode_protocol.hpp.
#pragma once

#include <caf/typed_event_based_actor.hpp>

#include <unordered_set>

#include <memory>
#include <vector>

#include "actors/engine_context.hpp"
#include "actors/protocol/decode_protocol.hpp"
#include "actors/protocol/front_door_protocol.hpp"
#include "actors/protocol/scheduler_protocol.hpp"
#include "runtime/step/batch_decoder.hpp"

namespace fw::actors {

struct decode_state {
  // CAF constructs a state from the actor pointer when it can; with C++20 aggregate
  // parenthesized init that would turn the pointer into the first member. Take it explicitly.
  explicit decode_state(caf::local_actor*) {}
  std::unique_ptr<batch_decoder> decoder;
  bool stepping = false;
  /// The draft actor speculating sequences ask for proposals (the supervisor's); null: none now
  /// (no draft, or it died and its replacement is not here yet: they step plainly).
  draft_actor draft;
  /// Prefill-finish times of sequences that joined since the last step (their first step is next).
  std::vector<double> joined_prefilled_s;
  static inline const char* name = "fw.decode";
};

/// A worker on `device`; `offload`: the offload device's worker (plain decoding of sequences
/// moved there; it never moves them on).
decode_actor::behavior_type decode_worker(decode_actor::stateful_pointer<decode_state> self, const engine_context* ctx,
                                          front_door_actor front_door, scheduler_actor scheduler, backend* device,
                                          bool offload);

}  // namespace fw::actors
