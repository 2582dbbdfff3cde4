// front_door_actor: where clients come in. Keeps each request's sink (the client's actor) and
// timings, forwards requests and cancels to the scheduler, and splits the decode actor's
// per-step batches into per-request stream events (token events, then one final event with
// usage and TTFT/TPOT). A sink that dies cancels its request. Protocol:
// actors/front_door_protocol.hpp.
#pragma once

#include <caf/actor.hpp>
#include <caf/stateful_actor.hpp>

#include <chrono>
#include <unordered_map>

#include "actors/front_door_protocol.hpp"

namespace fw::actors {

struct client_entry {
  caf::actor sink;
  std::chrono::steady_clock::time_point submitted;
  std::chrono::steady_clock::time_point first_token;
  bool has_first = false;
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
};

struct front_door_state {
  // CAF constructs a state from the actor pointer when it can; with C++20 aggregate
  // parenthesized init that would turn the pointer into the first member. Take it explicitly.
  explicit front_door_state(caf::local_actor*) {}

  caf::actor scheduler;
  std::unordered_map<uint64_t, client_entry> clients;
  static inline const char* name = "fw.front_door";
};

using init_atom = caf::atom_constant<caf::atom("init")>;

/// Spawned first; receives (init_atom, scheduler) before any client request.
caf::behavior front_door_actor(caf::stateful_actor<front_door_state>* self);

}  // namespace fw::actors
