// scheduler_stats_of: the scheduler's numbers as one value (`:stats`, `/metrics`, tests): the
// request table's counts, KV pools (cached prefixes count as free, as vLLM counts its cached
// blocks), the prefix cache, the decode-time model, rollout, offload and, with a prefill device,
// the prefill queue, routes and KV transfers. Read-only over the scheduler's state; the
// scheduler actor answers stats_atom with it. Thread-safety: the scheduler actor's thread.
#pragma once

#include "actors/engine_context.hpp"
#include "actors/scheduler_actor.hpp"

namespace fw::actors {

scheduler_stats scheduler_stats_of(const scheduler_state& st, const engine_context& ctx);

}  // namespace fw::actors
