// The load generator behind `flywheel bench --server URL --rate R --duration S [--concurrency C]`:
// Poisson arrivals at R requests/s for S seconds against any OpenAI-compatible server (flywheel's
// or another), each a streaming /v1/chat/completions request of one user message, replayed by
// tools/bench/trace_replay (an answer without any text counts as an error). Measures from each
// arrival: TTFT, TPOT (per request: time after the first token / tokens after it), inter-token
// gaps and end-to-end latency (P50/P95/P99), achieved QPS, output tokens/s and errors by status,
// with a progress line on stderr. With C > 0 at most C requests are open at once (arrivals
// wait: reported as client_wait_ms). A benchmark, not a test.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runtime/base/expected.hpp"

namespace fw::cli {

struct server_bench_options {
  std::string url;          ///< http://HOST:PORT
  double rate = 1;          ///< mean arrivals per second
  double duration_s = 30;   ///< arrivals stop after this; open requests are waited for
  int concurrency = 0;      ///< 0: no cap
  int max_tokens = 64;
  std::string model;        ///< "" : the first id of /v1/models
  std::string prompt;       ///< "" : varied built-in prompts
  std::string api_key;
  uint64_t seed = 1;        ///< arrival times
  bool progress = true;
};

expected<nlohmann::json> run_server_bench(const server_bench_options& o);

}  // namespace fw::cli
