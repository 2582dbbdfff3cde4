// The prefill/decode separation benchmark behind `flywheel bench --workload mixed`: one arrival
// schedule (Poisson arrivals of short chat requests, some long prompts, a few long generations;
// fixed seed; the long prompts evenly spaced) replayed through the actor runtime in each configuration - co-located (one device,
// first come first served, whole-prompt prefill), logical (one device, decode priority, chunked
// prefill), physical (a prefill device and a decode device of one core each, KV moved through
// kv_codec) and offload (device 0 logical, long generations moved mid-way to device 1) - all built
// through the composition root. Reports per configuration P50/P95/P99 TTFT,
// TPOT and inter-token latency of the short requests, QPS, goodput at an SLO, the KV transfer
// share, and the scheduler's decision time; then a 10-turn chat with and without the prefix cache
// (turn 1 vs turn 10 TTFT). A benchmark, not a test.
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/setup/runtime_parts.hpp"

namespace fw::cli {

struct mixed_bench_options {
  double duration_s = 20;        ///< seconds of arrivals
  double short_rate = 2;         ///< short chat requests per second (Poisson)
  int short_prompt = 96;         ///< mean prompt tokens of a short request (uniform 0.5x..1.5x)
  int short_gen = 48;            ///< tokens each short request generates
  double long_rate = 0.1;       ///< long-prompt requests per second (evenly spaced, jittered)
  int long_prompt = 2048;
  int long_gen = 16;
  int long_generations = 2;      ///< requests at t = 0 that generate long_generation_tokens
  int long_generation_tokens = 512;
  uint32_t logical_chunk = 64;   ///< prefill chunk of the logical configuration
  /// > 0: also "logical-budget", the logical configuration with chunks of at most 512 tokens
  /// sized to this many ms each ([scheduler] prefill_chunk_ms)
  double logical_chunk_ms = 20;
  double slo_ttft_s = 0.5;       ///< goodput: requests within both SLOs per second
  double slo_tpot_s = 0.05;
  uint64_t seed = 7;
  bool chat = true;              ///< also run the 10-turn chat
};

/// Runs every configuration; {"configs": [...], "ratios": {...}, "chat": {...}}.
expected<nlohmann::json> run_mixed_bench(const runtime_parts& base, const mixed_bench_options& o);

/// Prints the tables of a run_mixed_bench result.
void print_mixed_bench(const nlohmann::json& r);

}  // namespace fw::cli
