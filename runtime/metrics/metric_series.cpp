#include "runtime/metrics/metric_series.hpp"

namespace fw {

std::span<const metric_series* const> all_series() {
  static const metric_series* const table[] = {
      &series::time_to_first_token,
      &series::inter_token_latency,
      &series::e2e_request_latency,
      &series::prompt_tokens,
      &series::generation_tokens,
      &series::request_success,
      &series::request_failure,
      &series::num_requests_running,
      &series::num_requests_waiting,
      &series::kv_cache_usage,
      &series::worker_restarts,
      &series::prefix_cache_queries,
      &series::prefix_cache_hits,
      &series::prefix_cache_hit_tokens,
      &series::prefix_cache_blocks,
      &series::ignored_errors,
      &series::spec_decode_num_drafts,
      &series::spec_decode_num_draft_tokens,
      &series::spec_decode_num_accepted_tokens,
      &series::spec_decode_num_accepted_tokens_per_pos,
      &series::spec_decode_draft_seconds,
      &series::spec_decode_draft_ahead_seconds,
      &series::spec_decode_draft_hidden_seconds,
      &series::spec_decode_draft_ahead_hits,
      &series::prefill_to_decode_latency,
      &series::kv_transfers,
      &series::kv_transfer_bytes,
      &series::kv_transfer_f32_bytes,
      &series::kv_transfer_seconds,
      &series::kv_transfer_refused,
      &series::prefill_failovers,
      &series::kv_transfer_compression_ratio,
      &series::device_queue_depth,
      &series::offloaded_sequences,
      &series::device_kv_usage,
      &series::rollout_stage,
      &series::rollout_share,
      &series::rollout_decisions,
      &series::rollout_stage_p99,
      &series::rollout_stage_error_rate,
      &series::rollout_stage_draft_failure_rate,
      &series::rollout_stage_requests,
      &series::degradation_state,
      &series::degradation_transitions,
      &series::device_temperature,
      &series::link_bandwidth,
      &series::worker_crashes,
      &series::node_local_prefills,
      &series::node_peer_connected,
      &series::node_peer_prefills,
      &series::node_peer_transfer_bytes,
      &series::node_peer_failovers,
      &series::node_peer_forged,
      &series::node_peer_connects,
      &series::node_peer_prefill_to_decode,
      &series::http_requests,
      &series::alerts_firing,
  };
  return table;
}

const char* to_string(series_type t) {
  switch (t) {
    case series_type::counter: return "counter";
    case series_type::gauge: return "gauge";
    case series_type::histogram: return "histogram";
  }
  return "?";
}

}  // namespace fw
