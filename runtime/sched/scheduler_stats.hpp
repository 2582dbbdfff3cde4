// scheduler_stats: the scheduler's numbers as one value, for `:stats`, `/metrics` and tests:
// queues, KV blocks, the prefix cache, separate-device routing and transfers, the decode-time
// model, rollout, offload and how long decisions take. Made by scheduler::stats().
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fw {

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
  uint64_t prefill_slices = 0;             ///< prefill_order "shortest": slices sent to the prefill worker
  uint64_t prefill_reordered = 0;          ///< ... that went before an older prompt
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
  uint64_t offload_asked = 0;              ///< hand-overs offload_policy asked of the decode worker
  uint64_t offload_missed = 0;             ///< ... whose sequence ended before the hand-over reached it
  uint64_t offload_kv_used_blocks = 0;
  uint64_t offload_kv_total_blocks = 0;
  uint64_t decisions = 0;                  ///< scheduling decisions (admission passes, routes)
  double decision_us_p99 = 0;              ///< over the last 8192
  double decision_us_max = 0;
};

}  // namespace fw
