// Protocol of the scheduler, which owns the request table (runtime/sched: admission, phases)
// and KV allocation, and moves requests between the prefill and decode workers:
//   (generate_atom, client_request)                 from the front door
//   (cancel_atom, uint64_t id)                      from the front door
//   (done_atom, finished_ids)                       from the decode worker
//   (fail_atom, sequence_failures)                  from the decode worker
//   (worker_atom, prefill_actor, std::string why)   from the supervisor: a (new) prefill worker;
//   (worker_atom, decode_actor, std::string why)    why is empty at start, else how the old died
//   (progress_atom, step_tokens)                    from a decode worker: tokens it produced
//   (lost_atom, worker_kind, std::string why)       from the supervisor: a worker died (its
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

namespace fw::actors {

struct scheduler_stats {
  uint64_t waiting = 0;
  uint64_t prefilling = 0;
  uint64_t decoding = 0;
  uint64_t kv_used_blocks = 0;  ///< held by requests (cached prefixes not counted: reclaimable)
  uint64_t kv_total_blocks = 0;
  uint64_t completed = 0;
  uint64_t failed = 0;
  uint64_t worker_restarts = 0;
  uint64_t requeued = 0;      ///< requests sent back to waiting after their prefill worker died
  uint64_t resumed = 0;       ///< decoding requests re-admitted from their history after their decode worker died
  uint64_t peak_waiting = 0;  ///< the longest the admission queue has been
  uint64_t peak_running = 0;  ///< the most requests admitted at once
  uint64_t prefix_cache_queries = 0;       ///< admissions that looked up the prefix cache
  uint64_t prefix_cache_hits = 0;          ///< of those, served at least one block
  uint64_t prefix_cache_hit_tokens = 0;    ///< prompt tokens copied instead of recomputed
  uint64_t prefix_cache_query_tokens = 0;  ///< prompt tokens looked up
  uint64_t prefix_cache_blocks = 0;        ///< blocks the cache holds now (pool used = both)
  uint64_t prefill_chunks = 0;             ///< forward passes of the prefills finished so far
  uint64_t prefill_chunk_rows = 0;         ///< prompt rows they ran (mean chunk: rows / chunks)
  // Separate prefill and decode devices (all zero when co-located).
  bool physical = false;                   ///< a prefill device besides the decode device
  uint64_t prefill_kv_used_blocks = 0;     ///< the prefill device's pool (cached prefixes not counted)
  uint64_t prefill_kv_total_blocks = 0;
  uint64_t prefill_queue = 0;              ///< requests on the prefill device now
  uint64_t prefill_queue_tokens = 0;       ///< their prompt tokens
  double prefill_tokens_per_s = 0;         ///< measured on the prefill device (moving average)
  uint64_t kv_transfers = 0;               ///< sequences moved prefill -> decode device
  uint64_t kv_transfer_bytes = 0;          ///< kv_codec stream bytes moved
  uint64_t kv_transfer_f32_bytes = 0;      ///< the same tokens as an f32 cache (ratio = bytes / this)
  double kv_transfer_seconds = 0;          ///< encode + decode time, all transfers
  uint64_t kv_transfer_refused = 0;        ///< streams refused (corrupt, truncated): recomputed
  uint64_t prefill_failovers = 0;          ///< prefills moved to the decode device past the deadline
  uint64_t routed_co_located = 0;          ///< requests the route policy prefilled co-located
  uint64_t routed_physical = 0;            ///< ... and on the prefill device
  std::string last_route_reason;           ///< the route policy's last co-located reason
  uint8_t degradation = 0;                 ///< the degradation_state the scheduler applies
  double predictor_a = 0;                  ///< decode-time model: seconds per context token
  double predictor_b = 0;                  ///< ... and per layer per sequence
  uint64_t predictor_steps = 0;            ///< decode steps it was fitted on (0: not fitted)
  uint64_t admission_holds = 0;            ///< admissions [scheduler] admission_tpot_ms held back
  uint32_t rollout_stage = 0;              ///< [rollout]: the stage rolling out (1..4); 0: off
  double rollout_share = 0;                ///< of the traffic it serves
  uint64_t rollout_decisions = 0;          ///< advances and breaker trips
  std::vector<std::string> rollout_log;    ///< the last 16: "2 -> 1: breaker: ..."
  std::vector<uint64_t> rollout_requests;  ///< per stage 1..4: outcomes in its window
  std::vector<double> rollout_p99_ms;      ///< per stage: P99 latency per token
  std::vector<double> rollout_error_rate;  ///< per stage
  std::vector<double> rollout_draft_failure;  ///< per stage: draft proposals that errored
  bool offload_device = false;             ///< an offload device finishes long-tail sequences
  uint64_t offloaded = 0;                  ///< sequences moved there so far
  uint64_t offload_active = 0;             ///< decoding there now
  uint64_t offload_refused = 0;            ///< moves abandoned (stream refused, no room): kept decoding
  uint64_t offload_kv_used_blocks = 0;
  uint64_t offload_kv_total_blocks = 0;
  uint64_t decisions = 0;                  ///< scheduling decisions (admission passes, routes)
  double decision_us_p99 = 0;              ///< over the last 8192
  double decision_us_max = 0;
};

using scheduler_actor = caf::typed_actor<
    caf::reacts_to<generate_atom, client_request>, caf::reacts_to<cancel_atom, uint64_t>,
    caf::reacts_to<done_atom, finished_ids>, caf::reacts_to<fail_atom, sequence_failures>,
    caf::reacts_to<worker_atom, prefill_actor, std::string>, caf::reacts_to<worker_atom, decode_actor, std::string>,
    caf::reacts_to<fallback_atom, prefill_actor, std::string>, caf::reacts_to<worker_atom, transfer_actor, std::string>,
    caf::reacts_to<offload_atom, sequence_box>, caf::reacts_to<offload_atom, decode_actor, std::string>,
    caf::reacts_to<progress_atom, step_tokens>, caf::reacts_to<lost_atom, uint8_t, std::string>,
    caf::reacts_to<degrade_atom, uint8_t, std::string>,
    caf::reacts_to<tick_atom>, caf::replies_to<stats_atom>::with<scheduler_stats>>;

/// Which worker a lost_atom names.
enum class worker_kind : uint8_t { prefill, fallback, transfer, decode, offload };

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scheduler_stats& x) {
  return f(caf::meta::type_name("fw::actors::scheduler_stats"), x.waiting, x.prefilling, x.decoding,
           x.kv_used_blocks, x.kv_total_blocks, x.completed, x.failed, x.worker_restarts, x.requeued, x.resumed,
           x.peak_waiting, x.peak_running, x.prefix_cache_queries, x.prefix_cache_hits, x.prefix_cache_hit_tokens,
           x.prefix_cache_query_tokens, x.prefix_cache_blocks, x.prefill_chunks, x.prefill_chunk_rows, x.physical, x.prefill_kv_used_blocks,
           x.prefill_kv_total_blocks, x.prefill_queue, x.prefill_queue_tokens, x.prefill_tokens_per_s, x.kv_transfers,
           x.kv_transfer_bytes, x.kv_transfer_f32_bytes, x.kv_transfer_seconds, x.kv_transfer_refused,
           x.prefill_failovers, x.routed_co_located, x.routed_physical, x.last_route_reason, x.degradation, x.predictor_a, x.predictor_b, x.predictor_steps, x.admission_holds, x.rollout_stage, x.rollout_share,
           x.rollout_decisions, x.rollout_log, x.rollout_requests, x.rollout_p99_ms, x.rollout_error_rate, x.rollout_draft_failure, x.offload_device, x.offloaded, x.offload_active, x.offload_refused, x.offload_kv_used_blocks, x.offload_kv_total_blocks,
           x.decisions, x.decision_us_p99, x.decision_us_max);
}

inline void add_scheduler_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<scheduler_stats>("fw::actors::scheduler_stats");
  cfg.add_message_type<scheduler_actor>("fw::actors::scheduler_actor");
}

}  // namespace fw::actors
