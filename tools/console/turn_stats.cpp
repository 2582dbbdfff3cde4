#include "tools/console/turn_stats.hpp"

#include "tools/console/format_line.hpp"

#include <cstdarg>
#include <cstdio>

namespace fw::console {
namespace {

using fw::console::format_line;

}  // namespace

void turn_stats::record(const turn_record& t) {
  last_ = t;
  ++turns_;
  if (t.cancelled) ++cancelled_;
  if (t.failed) ++failed_;
  prompt_tokens_ += t.prompt_tokens;
  generated_tokens_ += t.generated_tokens;
  if (t.generated_tokens > 0) {
    ++ttft_count_;
    ttft_sum_ms_ += t.ttft_ms;
  }
  if (t.generated_tokens > 1 && t.tpot_ms > 0) {
    decode_tokens_ += t.generated_tokens - 1;
    decode_ms_ += t.tpot_ms * (t.generated_tokens - 1);
  }
}

std::string turn_stats::last_line() const {
  if (!has_last()) return "last turn: none yet";
  const auto& t = last_;
  std::string s = format_line("last turn: %u prompt tokens, %u generated", t.prompt_tokens, t.generated_tokens);
  s += t.generated_tokens > 0 ? format_line(", TTFT %.1f ms", t.ttft_ms) : std::string(", TTFT n/a");
  if (t.tpot_ms > 0) s += format_line(", TPOT %.1f ms, %.1f tokens/s", t.tpot_ms, t.tokens_per_s());
  else s += ", TPOT n/a";
  s += format_line(", total %.0f ms (finish: %s)", t.total_ms, t.finish.c_str());
  return s;
}

std::string turn_stats::totals_line() const {
  std::string s = format_line("totals: %llu request%s (%llu cancelled, %llu failed), %llu prompt tokens, %llu generated",
                         static_cast<unsigned long long>(turns_), turns_ == 1 ? "" : "s", static_cast<unsigned long long>(cancelled_),
                         static_cast<unsigned long long>(failed_), static_cast<unsigned long long>(prompt_tokens_),
                         static_cast<unsigned long long>(generated_tokens_));
  if (ttft_count_ > 0) s += format_line(", mean TTFT %.1f ms", ttft_sum_ms_ / ttft_count_);
  if (decode_ms_ > 0) s += format_line(", %.1f tokens/s", 1000.0 * decode_tokens_ / decode_ms_);
  return s;
}

std::string turn_stats::summary_line() const {
  const auto& t = last_;
  std::string s = format_line("[%u tokens", t.generated_tokens);
  if (t.tpot_ms > 0) s += format_line(", %.1f tokens/s", t.tokens_per_s());
  if (t.generated_tokens > 0) s += format_line(", TTFT %.0f ms", t.ttft_ms);
  if (t.finish != "stop") s += ", finish: " + t.finish;
  return s + "]";
}

}  // namespace fw::console
