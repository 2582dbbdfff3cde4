// turn_stats: what the console's :stats shows about its own requests: the last turn's token counts
// and timings (from the engine's final stream event) and running totals.
// Thread-safety: none; owned and used by one console_session.
#pragma once

#include <cstdint>
#include <string>

namespace fw::console {

/// One finished request as the console saw it.
struct turn_record {
  uint32_t prompt_tokens = 0;
  uint32_t generated_tokens = 0;
  double ttft_ms = 0;   ///< 0 when no token came
  double tpot_ms = 0;   ///< mean time per output token after the first; 0 with < 2 tokens
  double total_ms = 0;
  std::string finish;   ///< "stop", "length", "cancelled", or the error's kind
  bool cancelled = false;
  bool failed = false;

  /// Decode rate after the first token (1000 / TPOT), 0 when unknown.
  [[nodiscard]] double tokens_per_s() const { return tpot_ms > 0 ? 1000.0 / tpot_ms : 0.0; }
};

class turn_stats {
 public:
  void record(const turn_record& t);

  [[nodiscard]] bool has_last() const { return turns_ > 0; }
  [[nodiscard]] const turn_record& last() const { return last_; }

  /// "last turn: 31 prompt tokens, 16 generated, TTFT 45.3 ms, TPOT 8.1 ms, 123.5 tokens/s
  /// (finish: length)" or "last turn: none yet".
  [[nodiscard]] std::string last_line() const;
  /// "totals: 2 requests (0 cancelled, 0 failed), 62 prompt tokens, 32 generated, mean TTFT 44.0 ms,
  /// 120.1 tokens/s".
  [[nodiscard]] std::string totals_line() const;
  /// The short line printed after a turn at a terminal: "[16 tokens, 123.5 tokens/s, TTFT 45 ms]".
  [[nodiscard]] std::string summary_line() const;

 private:
  turn_record last_;
  uint64_t turns_ = 0, cancelled_ = 0, failed_ = 0;
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0;
  uint64_t ttft_count_ = 0;
  double ttft_sum_ms_ = 0;
  uint64_t decode_tokens_ = 0;  // tokens after each request's first
  double decode_ms_ = 0;        // time spent on them
};

}  // namespace fw::console
