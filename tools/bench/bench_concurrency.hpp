// The serving benchmark behind `flywheel bench --concurrency 1,4,16`: for each level, that many
// requests at once through the actor runtime (continuous batching), reporting aggregate decode
// tokens/s and TTFT/TPOT percentiles. A benchmark, not a test.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "runtime/setup/runtime_parts.hpp"

namespace fw::cli {

struct concurrency_bench_options {
  std::vector<int> levels{1, 4, 16};
  int prompt_tokens = 128;
  int gen_tokens = 128;
  bool speculative = false;  ///< use the configured draft in the decode actor
};

/// Runs the levels; returns one JSON object per level:
/// {"concurrency", "aggregate_tok_s", "ttft_ms_p50", "ttft_ms_p99", "tpot_ms_p50", "tpot_ms_p99", ...}.
expected<nlohmann::json> run_concurrency_bench(runtime_parts& s, const concurrency_bench_options& o);

}  // namespace fw::cli
