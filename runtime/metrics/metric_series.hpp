// metric_series: every series flywheel exports, as one typed table (name, type, help, the labels
// besides model_name, and a histogram's buckets). The engine, the server and the console register
// and read series through these entries (metrics_registry::counter/gauge/histogram(series, ...)),
// so a name or help text is written once; the docs' metric list is checked against all_series().
// Names follow vLLM's where one exists, with the "flywheel:" prefix; counters end in "_total".
// Thread-safety: constant data.
#pragma once

#include <span>
#include <vector>

namespace fw {

enum class series_type { counter, gauge, histogram };

struct metric_series {
  const char* name;
  series_type type;
  const char* help;
  const char* labels = "";  ///< label names besides model_name, comma-separated ("" none)
  const std::vector<double>& (*buckets)() = nullptr;  ///< histograms: the bucket upper bounds
};

/// Bucket upper bounds (seconds) of the latency histograms: vLLM's, with finer steps below 10 ms
/// for the per-token latencies of small models on CPUs.
namespace metric_buckets {
const std::vector<double>& time_to_first_token();
const std::vector<double>& inter_token_latency();
const std::vector<double>& e2e_request_latency();
const std::vector<double>& prefill_to_decode_latency();
}  // namespace metric_buckets

namespace series {
using enum series_type;
// -- requests (the front door) --
inline constexpr metric_series time_to_first_token{"flywheel:time_to_first_token_seconds", histogram,
    "Histogram of time to first token in seconds.", "", metric_buckets::time_to_first_token};
inline constexpr metric_series inter_token_latency{"flywheel:inter_token_latency_seconds", histogram,
    "Histogram of inter-token latency in seconds.", "", metric_buckets::inter_token_latency};
inline constexpr metric_series e2e_request_latency{"flywheel:e2e_request_latency_seconds", histogram,
    "Histogram of e2e request latency in seconds (finished requests).", "", metric_buckets::e2e_request_latency};
inline constexpr metric_series prompt_tokens{"flywheel:prompt_tokens_total", counter, "Number of prefill tokens processed."};
inline constexpr metric_series generation_tokens{"flywheel:generation_tokens_total", counter,
    "Number of generation tokens processed."};
inline constexpr metric_series request_success{"flywheel:request_success_total", counter,
    "Count of successfully processed requests.", "finished_reason"};
inline constexpr metric_series request_failure{"flywheel:request_failure_total", counter,
    "Count of requests that ended with an error, by reason (cancelled included).", "reason"};
// -- the scheduler (refreshed at render) --
inline constexpr metric_series num_requests_running{"flywheel:num_requests_running", gauge,
    "Number of requests in model execution batches (prefilling or decoding)."};
inline constexpr metric_series num_requests_waiting{"flywheel:num_requests_waiting", gauge,
    "Number of requests waiting to be processed."};
inline constexpr metric_series kv_cache_usage{"flywheel:kv_cache_usage_perc", gauge,
    "KV-cache usage. 1 means 100 percent usage."};
inline constexpr metric_series worker_restarts{"flywheel:worker_restarts_total", counter,
    "Number of prefill/decode workers restarted by the supervisor."};
inline constexpr metric_series prefix_cache_queries{"flywheel:prefix_cache_queries_total", counter,
    "Admitted requests that looked their prompt up in the prefix cache."};
inline constexpr metric_series prefix_cache_hits{"flywheel:prefix_cache_hits_total", counter,
    "Prefix-cache lookups that reused at least one KV block."};
inline constexpr metric_series prefix_cache_hit_tokens{"flywheel:prefix_cache_hit_tokens_total", counter,
    "Prompt tokens copied from the prefix cache instead of recomputed."};
inline constexpr metric_series prefix_cache_blocks{"flywheel:prefix_cache_blocks", gauge,
    "KV blocks the prefix cache holds (reclaimable; not in kv_cache_usage_perc)."};
inline constexpr metric_series ignored_errors{"flywheel:ignored_errors_total", counter,
    "Errors deliberately not acted on (KV releases on cleanup paths), process-wide; each is also logged as a warning."};
// -- speculative decoding (the decode worker; vLLM's names) --
inline constexpr metric_series spec_decode_num_drafts{"flywheel:spec_decode_num_drafts_total", counter,
    "Number of speculative steps that proposed draft tokens."};
inline constexpr metric_series spec_decode_num_draft_tokens{"flywheel:spec_decode_num_draft_tokens_total", counter,
    "Number of draft tokens proposed."};
inline constexpr metric_series spec_decode_num_accepted_tokens{"flywheel:spec_decode_num_accepted_tokens_total", counter,
    "Number of draft tokens accepted by the target."};
inline constexpr metric_series spec_decode_num_accepted_tokens_per_pos{
    "flywheel:spec_decode_num_accepted_tokens_per_pos_total", counter, "Accepted draft tokens per position.", "position"};
inline constexpr metric_series spec_decode_draft_seconds{"flywheel:spec_decode_draft_seconds_total", counter,
    "Drafting the target waited for (the draft actor's proposals not made ahead)."};
inline constexpr metric_series spec_decode_draft_ahead_seconds{"flywheel:spec_decode_draft_ahead_seconds_total", counter,
    "Drafting done ahead of the ask: while the target verified the previous step (draft_threads > 0), "
    "or as its verdict arrived (n-gram, feature, hybrid)."};
inline constexpr metric_series spec_decode_draft_hidden_seconds{"flywheel:spec_decode_draft_hidden_seconds_total", counter,
    "Drafting done ahead whose proposals were used: draft time the target did not wait for."};
inline constexpr metric_series spec_decode_draft_ahead_hits{"flywheel:spec_decode_draft_ahead_hits_total", counter,
    "Proposals answered from a draft made ahead (the verdict matched its guess, or it was drafted from the verdict)."};
inline constexpr metric_series prefill_to_decode_latency{"flywheel:prefill_to_decode_latency_seconds", histogram,
    "Histogram of the time from a request's prefill finishing to its first decode step (the KV hand-off).", "",
    metric_buckets::prefill_to_decode_latency};
// -- prefill/decode separation and offload --
inline constexpr metric_series kv_transfers{"flywheel:kv_transfers_total", counter,
    "Sequences whose KV moved from the prefill to the decode device."};
inline constexpr metric_series kv_transfer_bytes{"flywheel:kv_transfer_bytes_total", counter,
    "kv_codec stream bytes moved between devices."};
inline constexpr metric_series kv_transfer_f32_bytes{"flywheel:kv_transfer_f32_bytes_total", counter,
    "What the moved tokens take as an f32 cache (compression ratio = bytes / this)."};
inline constexpr metric_series kv_transfer_seconds{"flywheel:kv_transfer_seconds_total", counter,
    "Time spent encoding and decoding KV streams."};
inline constexpr metric_series kv_transfer_refused{"flywheel:kv_transfer_refused_total", counter,
    "KV streams refused (corrupt or truncated); the prompt was recomputed."};
inline constexpr metric_series prefill_failovers{"flywheel:prefill_failovers_total", counter,
    "Prefills moved to the decode device (co-located) after the prefill device missed the deadline or failed."};
inline constexpr metric_series kv_transfer_compression_ratio{"flywheel:kv_transfer_compression_ratio", gauge,
    "Transferred KV bytes / the f32 cache size of the same tokens."};
inline constexpr metric_series device_queue_depth{"flywheel:device_queue_depth", gauge,
    "Requests on each device: prefilling there, or decoding.", "device"};
inline constexpr metric_series offloaded_sequences{"flywheel:offloaded_sequences_total", counter,
    "Sequences moved to the offload device mid-generation."};
inline constexpr metric_series device_kv_usage{"flywheel:device_kv_usage_perc", gauge,
    "KV-cache usage of each device's pool.", "device"};
// -- rollout --
inline constexpr metric_series rollout_stage{"flywheel:rollout_stage", gauge,
    "The [rollout] stage rolling out: 1 quantization .. 4 physical PD and offload."};
inline constexpr metric_series rollout_share{"flywheel:rollout_share", gauge,
    "Share of new requests the rolling-out stage serves."};
inline constexpr metric_series rollout_decisions{"flywheel:rollout_decisions_total", counter,
    "Rollout advances and circuit-breaker trips."};
inline constexpr metric_series rollout_stage_p99{"flywheel:rollout_stage_p99_seconds_per_token", gauge,
    "P99 latency per token of each stage's window.", "stage"};
inline constexpr metric_series rollout_stage_error_rate{"flywheel:rollout_stage_error_rate", gauge,
    "Error rate of each stage's window.", "stage"};
inline constexpr metric_series rollout_stage_draft_failure_rate{"flywheel:rollout_stage_draft_failure_rate", gauge,
    "Draft proposals that errored, of each stage's window.", "stage"};
inline constexpr metric_series rollout_stage_requests{"flywheel:rollout_stage_requests", gauge,
    "Outcomes in each stage's window.", "stage"};
// -- supervision --
inline constexpr metric_series degradation_state{"flywheel:degradation_state", gauge,
    "Degradation state: 0 healthy, 1 link-degraded, 2 co-located, 3 cpu-fallback."};
inline constexpr metric_series degradation_transitions{"flywheel:degradation_transitions_total", counter,
    "Degradation state changes the supervisor applied."};
inline constexpr metric_series device_temperature{"flywheel:device_temperature_celsius", gauge,
    "Latest device temperature from telemetry.", "device"};
inline constexpr metric_series link_bandwidth{"flywheel:link_bandwidth_bytes_per_second", gauge,
    "Latest link bandwidth from telemetry.", "device"};
inline constexpr metric_series worker_crashes{"flywheel:worker_crashes_total", counter,
    "Worker deaths the supervisor saw, per worker.", "worker"};
// -- several nodes (a decode node's view of its prefill peers) --
inline constexpr metric_series node_local_prefills{"flywheel:node_local_prefills_total", counter,
    "Prompts this decode node prefilled itself (no peer up, short, cached prefix, or failed over)."};
inline constexpr metric_series node_peer_connected{"flywheel:node_peer_connected", gauge,
    "1 while the prefill node is connected (handshake passed, heartbeats answered).", "peer"};
inline constexpr metric_series node_peer_prefills{"flywheel:node_peer_prefills_total", counter,
    "Prompts the prefill node prefilled for this node.", "peer"};
inline constexpr metric_series node_peer_transfer_bytes{"flywheel:node_peer_transfer_bytes_total", counter,
    "KV stream bytes received from the prefill node.", "peer"};
inline constexpr metric_series node_peer_failovers{"flywheel:node_peer_failovers_total", counter,
    "Prefills of the peer redone here (lost, late or refused stream).", "peer"};
inline constexpr metric_series node_peer_forged{"flywheel:node_peer_forged_total", counter,
    "KV chunks and replies dropped: not sent by the peer, or their seal under the session key is wrong.", "peer"};
inline constexpr metric_series node_peer_connects{"flywheel:node_peer_connects_total", counter,
    "Handshakes with the peer that passed.", "peer"};
inline constexpr metric_series node_peer_prefill_to_decode{"flywheel:node_peer_prefill_to_decode_seconds_total", counter,
    "Prefill-to-decode latency summed: round trip minus the peer's forward passes, plus the KV decode.", "peer"};
// -- the server --
inline constexpr metric_series http_requests{"flywheel:http_requests_total", counter,
    "HTTP requests answered, by route and status code.", "route,code"};
inline constexpr metric_series alerts_firing{"flywheel:alerts_firing", gauge,
    "1 while the alert's condition holds over the [alerts] window, else 0.", "alert"};
}  // namespace series

/// Every entry above, in this order (docs and tests).
std::span<const metric_series* const> all_series();
const char* to_string(series_type t);

}  // namespace fw
