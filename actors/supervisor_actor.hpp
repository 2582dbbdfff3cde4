// supervisor_actor: spawns the worker actors (prefill, decode: detached, monitored) and
// restarts any that dies, telling the scheduler which one was replaced and why so it can fail
// and clean up the requests the dead worker held. (init_atom) -> ok starts the workers;
// (shutdown_atom) stops them without restarting; (fault_atom, uint8_t kind) arms a fault in a
// worker (tests). Later: telemetry polling and degradation decisions.
#pragma once

#include <caf/actor.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/engine_context.hpp"

namespace fw::actors {

struct supervisor_state {
  // CAF constructs a state from the actor pointer when it can; with C++20 aggregate
  // parenthesized init that would turn the pointer into the first member. Take it explicitly.
  explicit supervisor_state(caf::local_actor*) {}

  caf::actor front_door, scheduler, prefill, decode;
  bool stopping = false;
  uint64_t restarts = 0;
  static inline const char* name = "fw.supervisor";
};

caf::behavior supervisor_actor(caf::stateful_actor<supervisor_state>* self, const engine_context* ctx,
                               caf::actor front_door, caf::actor scheduler);

}  // namespace fw::actors
