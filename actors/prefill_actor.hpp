// prefill_actor: runs prompts into KV handles on its device (spawned detached: the forward pass
// blocks its own thread, not CAF's workers). Protocol: actors/prefill_protocol.hpp.
#pragma once

#include <caf/stateful_actor.hpp>

#include "actors/engine_context.hpp"

namespace fw::actors {

struct prefill_state {
  // CAF constructs a state from the actor pointer when it can; with C++20 aggregate
  // parenthesized init that would turn the pointer into the first member. Take it explicitly.
  explicit prefill_state(caf::local_actor*) {}

  bool fault_armed = false;
  static inline const char* name = "fw.prefill";
};

caf::behavior prefill_actor(caf::stateful_actor<prefill_state>* self, const engine_context* ctx);

}  // namespace fw::actors
