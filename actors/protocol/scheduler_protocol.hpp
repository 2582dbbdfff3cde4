// Protocol of the scheduler, which owns the request table (runtime/sched: admission, phases)
// and KV allocation, and moves requests between the prefill and decode workers:
//   (generate_atom, client_request)                 from the front door
//   (cancel_atom, uint64_t id)                      from the front door
//   (done_atom, finished_ids)                       from the decode worker
//   (fail_atom, sequence_failures)                  from the decode worker
//   (worker_atom, prefill_actor, std::string why)   from the supervisor: a (new) prefill worker;
//   (worker_atom, decode_actor, std::string why)    why is empty at start, else how the old died
//   (progress_atom, step_tokens)                    from a decode worker: tokens it produced
//   (lost_atom, uint8_t worker_kind, std::string why)       from the supervisor: a worker died (its
//                                                   replacement comes as worker_atom later);
//                                                   what it held is re-admitted or re-routed
//   (degrade_atom, uint8_t state, std::string why)  from the supervisor: a degradation_state to
//                                                   apply (int8 KV wire, co-located routes,
//                                                   prefill-device jobs failed over now)
//   (tick_atom)                                     its own timer: request timeouts
//   (stats_atom) -> scheduler_stats                 for consoles and tests
// Failures go to the front door as (fail_atom, request_failure).
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actors/protocol/atoms.hpp"
#include "actors/protocol/decode_protocol.hpp"
#include "actors/protocol/front_door_messages.hpp"
#include "actors/protocol/prefill_protocol.hpp"
#include "actors/protocol/transfer_protocol.hpp"
#include "runtime/sched/scheduler_actions.hpp"
#include "runtime/sched/scheduler_stats.hpp"

// Inspectors of the runtime values this protocol carries (found by ADL in namespace fw).
namespace fw {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scheduler_stats& x) {
  return f(caf::meta::type_name("fw::actors::scheduler_stats"), x.waiting, x.prefilling, x.decoding,
           x.kv_used_blocks, x.kv_total_blocks, x.completed, x.failed, x.worker_restarts, x.requeued, x.resumed,
           x.peak_waiting, x.peak_running, x.prefix_cache_queries, x.prefix_cache_hits, x.prefix_cache_hit_tokens,
           x.prefix_cache_query_tokens, x.prefix_cache_blocks, x.prefill_chunks, x.prefill_chunk_rows, x.physical, x.prefill_kv_used_blocks,
           x.prefill_kv_total_blocks, x.prefill_queue, x.prefill_queue_tokens, x.prefill_tokens_per_s, x.kv_transfers,
           x.kv_transfer_bytes, x.kv_transfer_f32_bytes, x.kv_transfer_seconds, x.kv_transfer_refused,
           x.prefill_failovers, x.routed_co_located, x.routed_physical, x.last_route_reason, x.degradation, x.predictor_a, x.predictor_b, x.predictor_steps, x.admission_holds, x.rollout_stage, x.rollout_share,
           x.rollout_decisions, x.rollout_log, x.rollout_requests, x.rollout_p99_ms, x.rollout_error_rate, x.rollout_draft_failure, x.offload_device, x.offloaded, x.offload_active, x.offload_refused, x.offload_asked, x.offload_missed, x.offload_kv_used_blocks, x.offload_kv_total_blocks,
           x.decisions, x.decision_us_p99, x.decision_us_max);
}

}  // namespace fw

namespace fw::actors {

// The runtime values this protocol carries, by their protocol names too.
using fw::scheduler_stats;
using fw::worker_kind;

using scheduler_actor = caf::typed_actor<
    caf::reacts_to<generate_atom, client_request>, caf::reacts_to<cancel_atom, uint64_t>,
    caf::reacts_to<done_atom, finished_ids>, caf::reacts_to<fail_atom, sequence_failures>,
    caf::reacts_to<worker_atom, prefill_actor, std::string>, caf::reacts_to<worker_atom, decode_actor, std::string>,
    caf::reacts_to<fallback_atom, prefill_actor, std::string>, caf::reacts_to<worker_atom, transfer_actor, std::string>,
    caf::reacts_to<offload_atom, sequence_box>, caf::reacts_to<offload_atom, decode_actor, std::string>,
    caf::reacts_to<progress_atom, step_tokens>, caf::reacts_to<lost_atom, uint8_t, std::string>,
    caf::reacts_to<degrade_atom, uint8_t, std::string>,
    caf::reacts_to<tick_atom>, caf::replies_to<stats_atom>::with<scheduler_stats>>;

inline void add_scheduler_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<scheduler_stats>("fw::actors::scheduler_stats");
  cfg.add_message_type<scheduler_actor>("fw::actors::scheduler_actor");
}

}  // namespace fw::actors
