#include <algorithm>
#include <string>

#include "runtime/sched/scheduler.hpp"

namespace fw {

scheduler_stats scheduler::stats() const {
  const auto c = table_.counts();
  scheduler_stats s;
  s.waiting = c.waiting;
  s.prefilling = c.prefilling;
  s.decoding = c.decoding;
  s.completed = c.completed;
  s.failed = c.failed + rejected_;
  s.worker_restarts = worker_restarts_;
  s.requeued = c.requeued;
  s.resumed = c.resumed;
  s.peak_waiting = c.peak_waiting;
  s.peak_running = c.peak_running;
  const auto& pc = cache_.stats();
  // Cached prefixes are reclaimable (admission evicts them), so they count as free here, as
  // vLLM counts its cached blocks; prefix_cache_blocks says how many there are.
  auto held_by_requests = [&](const kv_block_pool& p) {
    return p.used_blocks() - std::min<uint64_t>(p.used_blocks(), pc.blocks);
  };
  const kv_block_pool& pool = *decode_pool_;  // the decode device's
  s.kv_used_blocks = held_by_requests(pool);
  s.kv_total_blocks = pool.total_blocks();
  s.prefix_cache_queries = pc.queries;
  s.prefix_cache_hits = pc.hits;
  s.prefix_cache_hit_tokens = pc.hit_tokens;
  s.prefix_cache_query_tokens = pc.query_tokens;
  s.prefix_cache_blocks = pc.blocks;
  s.decisions = decisions_;
  s.prefill_chunks = prefill_chunks_;
  s.prefill_chunk_rows = prefill_chunk_rows_;
  s.prefill_slices = prefill_slices_;
  s.prefill_reordered = prefill_reordered_;
  s.degradation = degradation_;
  if (predictor_.fitted()) {
    s.predictor_a = predictor_.a();
    s.predictor_b = predictor_.b();
    s.predictor_steps = predictor_.steps();
  }
  s.admission_holds = admission_holds_;
  if (rollout_) {
    const auto& b = *rollout_;
    s.rollout_stage = b.stage();
    s.rollout_share = b.limits().shares[b.stage() - 1];
    s.rollout_decisions = b.decisions().size();
    for (const auto& d : b.decisions())
      s.rollout_log.push_back(std::to_string(d.from) + " -> " + std::to_string(d.to) + ": " + d.reason);
    if (s.rollout_log.size() > 16) s.rollout_log.erase(s.rollout_log.begin(), s.rollout_log.end() - 16);
    for (uint32_t stage = 1; stage <= 4; ++stage) {
      const auto ss = b.stats(stage);
      s.rollout_requests.push_back(ss.requests);
      s.rollout_p99_ms.push_back(ss.p99_per_token_s * 1000);
      s.rollout_error_rate.push_back(ss.error_rate);
      s.rollout_draft_failure.push_back(ss.draft_failure);
    }
  }
  if (offload_pool_) {
    s.offload_device = true;
    s.offloaded = offloaded_total_;
    s.offload_active = offloaded_.size();
    s.offload_refused = offload_refused_;
    s.offload_asked = offload_asked_;
    s.offload_missed = offload_missed_;
    s.offload_kv_used_blocks = offload_pool_->used_blocks();
    s.offload_kv_total_blocks = offload_pool_->total_blocks();
  }
  if (offload_pool_ || physical()) {  // the transfer worker moves KV
    s.kv_transfer_bytes = pd_.bytes;
    s.kv_transfer_f32_bytes = pd_.f32_bytes;
    s.kv_transfer_seconds = pd_.transfer_s;
  }
  if (!decision_us_.empty()) {
    auto d = decision_us_;
    const size_t k = std::min(d.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(d.size())));
    std::nth_element(d.begin(), d.begin() + k, d.end());
    s.decision_us_p99 = d[k];
    s.decision_us_max = *std::max_element(d.begin(), d.end());
  }
  if (physical()) {
    // The cache lives on the prefill pool there.
    s.kv_used_blocks = pool.used_blocks();
    s.physical = true;
    const kv_block_pool& cache_pool = *prefill_pool_;
    s.prefill_kv_used_blocks = held_by_requests(cache_pool);
    s.prefill_kv_total_blocks = cache_pool.total_blocks();
    for (const auto& [id, sr] : staged_)
      if (sr.on_prefill_device && !sr.failed_over) {
        ++s.prefill_queue;
        s.prefill_queue_tokens += sr.prompt_tokens;
      }
    const auto& pd = pd_;
    s.prefill_tokens_per_s = pd.prefill_rate;
    s.kv_transfers = pd.transfers;
    s.kv_transfer_refused = pd.refused;
    s.prefill_failovers = pd.failovers;
    s.routed_co_located = pd.co_located;
    s.routed_physical = pd.physical;
    s.last_route_reason = pd.last_reason;
  }
  return s;
}

}  // namespace fw
