#include "actors/scheduler_stats_of.hpp"

#include <algorithm>
#include <string>

namespace fw::actors {

scheduler_stats scheduler_stats_of(const scheduler_state& st, const engine_context& ctx) {
  const auto c = st.table.counts();
  scheduler_stats s;
  s.waiting = c.waiting;
  s.prefilling = c.prefilling;
  s.decoding = c.decoding;
  s.completed = c.completed;
  s.failed = c.failed + st.rejected;
  s.worker_restarts = st.worker_restarts;
  s.requeued = c.requeued;
  s.resumed = c.resumed;
  s.peak_waiting = c.peak_waiting;
  s.peak_running = c.peak_running;
  const auto& pc = st.cache.stats();
  // Cached prefixes are reclaimable (admission evicts them), so they count as free here, as
  // vLLM counts its cached blocks; prefix_cache_blocks says how many there are.
  const kv_block_pool& pool = ctx.device->kv_pool();  // the decode device's
  s.kv_used_blocks = pool.used_blocks() - std::min<uint64_t>(pool.used_blocks(), pc.blocks);
  s.kv_total_blocks = pool.total_blocks();
  s.prefix_cache_queries = pc.queries;
  s.prefix_cache_hits = pc.hits;
  s.prefix_cache_hit_tokens = pc.hit_tokens;
  s.prefix_cache_query_tokens = pc.query_tokens;
  s.prefix_cache_blocks = pc.blocks;
  s.decisions = st.decisions;
  s.prefill_chunks = st.prefill_chunks;
  s.prefill_chunk_rows = st.prefill_chunk_rows;
  s.degradation = st.degradation;
  if (st.predictor.fitted()) {
    s.predictor_a = st.predictor.a();
    s.predictor_b = st.predictor.b();
    s.predictor_steps = st.predictor.steps();
  }
  s.admission_holds = st.admission_holds;
  if (st.rollout) {
    const auto& b = *st.rollout;
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
  if (ctx.offload_device) {
    s.offload_device = true;
    s.offloaded = st.offloaded_total;
    s.offload_active = st.offloaded.size();
    s.offload_refused = st.offload_refused;
    s.offload_kv_used_blocks = ctx.offload_device->kv_pool().used_blocks();
    s.offload_kv_total_blocks = ctx.offload_device->kv_pool().total_blocks();
    s.kv_transfer_bytes = st.pd.bytes;
    s.kv_transfer_f32_bytes = st.pd.f32_bytes;
    s.kv_transfer_seconds = st.pd.transfer_s;
  }
  if (!st.decision_us.empty()) {
    auto d = st.decision_us;
    const size_t k = std::min(d.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(d.size())));
    std::nth_element(d.begin(), d.begin() + k, d.end());
    s.decision_us_p99 = d[k];
    s.decision_us_max = *std::max_element(d.begin(), d.end());
  }
  if (ctx.physical()) {
    // The cache lives on the prefill pool there.
    s.kv_used_blocks = pool.used_blocks();
    s.physical = true;
    const kv_block_pool& cache_pool = ctx.prefill_device->kv_pool();
    s.prefill_kv_used_blocks = cache_pool.used_blocks() - std::min<uint64_t>(cache_pool.used_blocks(), pc.blocks);
    s.prefill_kv_total_blocks = cache_pool.total_blocks();
    for (const auto& [id, sr] : st.staged)
      if (sr.on_prefill_device && !sr.failed_over) {
        ++s.prefill_queue;
        s.prefill_queue_tokens += sr.prompt_tokens;
      }
    const auto& pd = st.pd;
    s.prefill_tokens_per_s = pd.prefill_rate;
    s.kv_transfers = pd.transfers;
    s.kv_transfer_bytes = pd.bytes;
    s.kv_transfer_f32_bytes = pd.f32_bytes;
    s.kv_transfer_seconds = pd.transfer_s;
    s.kv_transfer_refused = pd.refused;
    s.prefill_failovers = pd.failovers;
    s.routed_co_located = pd.co_located;
    s.routed_physical = pd.physical;
    s.last_route_reason = pd.last_reason;
    s.degradation = st.degradation;
  }
  return s;
}

}  // namespace fw::actors
