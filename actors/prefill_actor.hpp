// prefill_actor: runs prompts into KV handles on its device (the prefill device, or the decode
// device as the co-located fallback) (spawned detached: the forward pass
// blocks its own thread, not CAF's workers). A failed prefill replies a flywheel error (the
// errc survives the hop); a crash (tests: engine_faults) kills the worker, which the supervisor
// restarts. Protocol: actors/protocol/prefill_protocol.hpp.
#pragma once

#include <caf/typed_event_based_actor.hpp>

#include <optional>

#include "actors/engine_context.hpp"
#include "actors/protocol/prefill_protocol.hpp"
#include "runtime/sched/prefill_chunk_budget.hpp"

namespace fw::actors {

struct prefill_state {
  // CAF constructs a state from the actor pointer when it can; with C++20 aggregate
  // parenthesized init that would turn the pointer into the first member. Take it explicitly.
  explicit prefill_state(caf::local_actor*) {}
  /// On a device that also decodes, with [scheduler] prefill_chunk_ms: sizes the chunks from the
  /// ones this worker ran.
  std::optional<prefill_chunk_budget> budget;
  static inline const char* name = "fw.prefill";
};

/// A worker on `device`; `fallback`: the co-located worker on the decode device of a physical
/// pair (the prefill-device faults do not apply to it).
prefill_actor::behavior_type prefill_worker(prefill_actor::stateful_pointer<prefill_state> self, const engine_context* ctx,
                                            backend* device, bool fallback);

}  // namespace fw::actors
