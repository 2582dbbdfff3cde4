// trace_replay: replays an arrival trace (each request's arrival time, class, chat messages and
// max_tokens) against an OpenAI-compatible server, one thread per open request, with a progress
// line on stderr; then summarizes it: per class and overall TTFT, TPOT (per request: time after
// the first token / tokens after it), inter-token gaps and end-to-end latency (P50/P95/P99),
// QPS, output tokens/s, errors by status, and goodput at an SLO (requests per second of the
// arrival window that finished with TTFT and TPOT within it) with the SLO attainment.
// A benchmark's machinery, not a test.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/expected.hpp"

namespace fw::cli {

struct traced_request {
  double at_s = 0;          ///< arrival, seconds after the start
  std::string cls;          ///< e.g. "short", "long" (the summary's groups)
  nlohmann::json messages;  ///< OpenAI chat messages
  int max_tokens = 64;
};

struct replay_options {
  std::string url;            ///< http://HOST:PORT
  std::string model;          ///< "" : the first id of /v1/models
  std::string api_key;
  double temperature = 0;     ///< sent with every request (0: greedy)
  int concurrency = 0;        ///< > 0: at most this many open at once (arrivals wait)
  double drain_s = 120;       ///< after the last arrival, open requests get this long, then are abandoned
  std::string label = "bench";  ///< the progress line's name
  bool progress = true;
};

struct request_outcome {
  std::string cls;
  double at_s = 0;
  int status = 0;
  bool ok = false, abandoned = false;
  double client_wait_ms = 0, ttft_ms = 0, e2e_ms = 0;
  uint32_t tokens = 0;
  std::vector<double> gaps_ms;
  std::string error;
  [[nodiscard]] double tpot_ms() const { return tokens > 1 ? (e2e_ms - ttft_ms) / (tokens - 1) : 0; }
};

struct replay_result {
  std::string model;
  double wall_s = 0;       ///< first arrival to the last reply
  double window_s = 0;     ///< the arrival window (the trace's span)
  std::vector<request_outcome> outcomes;
};

expected<replay_result> replay_trace(const replay_options& o, const std::vector<traced_request>& trace);

struct slo {
  double ttft_ms = 1000;
  double tpot_ms = 50;
};

/// {"all": {...}, "short": {...}, ...} with the figures above; per group: requests, completed,
/// abandoned, errors, ttft_ms/tpot_ms/itl_ms/e2e_ms/client_wait_ms {p50,p95,p99,mean},
/// qps, output_tok_s, good (within the SLO), goodput, slo_attainment.
nlohmann::json summarize(const replay_result& r, const slo& s);

}  // namespace fw::cli
