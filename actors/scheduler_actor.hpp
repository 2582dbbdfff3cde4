// scheduler_actor: admission and placement. Owns runtime/scheduler_policy (pure decisions), the
// allocation of each request's KV handle (worst case, so decode never runs out) and the request
// life: waiting -> prefilling (prefill actor) -> decoding (decode actor) -> done. On a worker
// crash it frees the dead worker's KV by epoch and fails its requests; no request hangs.
// Protocol: actors/scheduler_protocol.hpp.
#pragma once

#include <caf/actor.hpp>
#include <caf/stateful_actor.hpp>

#include <unordered_map>

#include "actors/engine_context.hpp"
#include "actors/front_door_protocol.hpp"
#include "actors/scheduler_protocol.hpp"
#include "runtime/scheduler_policy.hpp"

namespace fw::actors {

enum class request_phase : uint8_t { waiting, prefilling, decoding };

struct scheduled_request {
  client_request req;
  uint32_t budget = 0;
  uint32_t epoch = 0;  ///< of its KV handle, once allocated
  request_phase phase = request_phase::waiting;
  bool cancelled = false;
};

struct scheduler_state {
  // CAF constructs a state from the actor pointer when it can; with C++20 aggregate
  // parenthesized init that would turn the pointer into the first member. Take it explicitly.
  explicit scheduler_state(caf::local_actor*) {}

  scheduler_policy policy{scheduler_limits{}};
  std::unordered_map<uint64_t, scheduled_request> requests;
  caf::actor front_door, prefill, decode;
  scheduler_stats stats;
  static inline const char* name = "fw.scheduler";
};

caf::behavior scheduler_actor(caf::stateful_actor<scheduler_state>* self, const engine_context* ctx,
                              caf::actor front_door);

}  // namespace fw::actors
