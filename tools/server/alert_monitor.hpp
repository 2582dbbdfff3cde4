// alert_monitor: SPEC.md's alert rules evaluated in-process over a sliding window, for the
// server's flywheel:alerts_firing{alert} gauge. A pure policy: it is handed cumulative metric
// readings with their time and keeps the readings of the last window_s seconds; each alert looks
// at the difference between the newest reading and the oldest one in the window (what PromQL's
// rate() over [window] sees). The same rules, for a Prometheus that scrapes the server, are in
// conf/prometheus/flywheel_rules.yml.
//   spec_acceptance_low  accepted / drafted tokens < min_acceptance_rate (>= 20 drafted in window)
//   ttft_p99_high        P99 time to first token > ttft_p99_slo_s
//   tpot_p99_high        P99 inter-token latency > tpot_p99_slo_s
//   prefill_to_decode_high  mean prefill-done -> first-decode-step latency > max_prefill_to_decode_s
// Quantiles interpolate linearly inside a bucket, as Prometheus's histogram_quantile().
// Thread-safety: not thread-safe; one caller (the server's /metrics handler).
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "runtime/config/sections/alerts_section.hpp"
#include "runtime/metrics/metrics_registry.hpp"

namespace fw::server {

struct alert_reading {
  double now_s = 0;            ///< monotonic seconds
  double draft_tokens = 0;     ///< cumulative
  double accepted_tokens = 0;  ///< cumulative
  histogram_metric::snapshot ttft;
  histogram_metric::snapshot tpot;
  histogram_metric::snapshot prefill_to_decode;
};

struct alert_status {
  std::string name;
  bool firing = false;
  double value = 0;      ///< NaN when the window has too little data
  double threshold = 0;
};

class alert_monitor {
 public:
  explicit alert_monitor(alerts_section cfg) : cfg_(cfg) {}
  /// Adds a reading (times must not go backwards) and evaluates every alert over the window.
  std::vector<alert_status> evaluate(const alert_reading& now);

  /// The q-quantile (0..1) of a histogram's observations; NaN when it has none.
  static double quantile(double q, const histogram_metric::snapshot& h);

 private:
  alerts_section cfg_;
  std::deque<alert_reading> window_;
};

}  // namespace fw::server
