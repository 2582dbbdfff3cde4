// workload_file: a served workload as JSONL, one request per line in the order a replay uses
// them (conf/workloads/customer_service.jsonl; docs/benchmarks.md "Workload files"):
//   {"class": "short", "messages": [{"role": "user", "content": "..."}], "max_tokens": 64}
// optionally with "at_s": the arrival in seconds from the start (a recorded log: every line has
// one, non-decreasing), else the replay draws Poisson arrivals. Malformed lines are errors
// naming file:line and what is wrong. Also turns the workload into calibration queries (one user
// message per line) and a held-out text (its longest messages) for quantization and perplexity.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/expected.hpp"
#include "tools/bench/trace_replay.hpp"

namespace fw::cli {

struct workload_line {
  std::string cls;
  nlohmann::json messages;
  int max_tokens = 64;
  double at_s = -1;  ///< < 0: not recorded
};

struct workload_file {
  std::string path;
  std::vector<workload_line> lines;
  bool timed = false;  ///< every line has at_s

  [[nodiscard]] static expected<workload_file> load(const std::string& path);
  [[nodiscard]] static expected<workload_file> parse(const std::string& text, const std::string& name);

  /// The arrival trace: recorded times (timed files: the lines within duration_s), or Poisson
  /// arrivals at `rate` per second for duration_s seconds taking lines in file order from
  /// `*line` (from the first again after the last: `wrapped` tells); *line is left at the next
  /// line, so consecutive traces use different lines (a server's prompt cache cannot serve one
  /// from an earlier one).
  [[nodiscard]] std::vector<traced_request> trace(double rate, double duration_s, uint64_t seed, size_t* line = nullptr,
                                                  bool* wrapped = nullptr) const;
  /// Each line's last user message on one line (newlines as spaces): calibration queries.
  [[nodiscard]] std::string user_queries() const;
  /// The user messages of class `cls` (blank-line separated): a held-out text for perplexity.
  [[nodiscard]] std::string texts_of(const std::string& cls) const;
};

}  // namespace fw::cli
