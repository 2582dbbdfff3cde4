// decode_actor: continuous batching on its device (spawned detached). Holds a batch_decoder;
// each step is one message to itself, so new sequences and cancels interleave between steps.
// Protocol: actors/decode_protocol.hpp. If a step throws, the actor dies; its state's destructor
// frees the KV of every sequence it held and the supervisor restarts it.
#pragma once

#include <caf/actor.hpp>
#include <caf/stateful_actor.hpp>

#include <memory>

#include "actors/engine_context.hpp"
#include "runtime/batch_decoder.hpp"

namespace fw::actors {

struct decode_state {
  // CAF constructs a state from the actor pointer when it can; with C++20 aggregate
  // parenthesized init that would turn the pointer into the first member. Take it explicitly.
  explicit decode_state(caf::local_actor*) {}

  std::unique_ptr<batch_decoder> decoder;
  bool stepping = false;
  bool fault_armed = false;
  static inline const char* name = "fw.decode";
};

caf::behavior decode_actor(caf::stateful_actor<decode_state>* self, const engine_context* ctx,
                           caf::actor front_door, caf::actor scheduler);

}  // namespace fw::actors
