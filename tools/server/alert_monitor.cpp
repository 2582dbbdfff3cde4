#include "tools/server/alert_monitor.hpp"

#include <cmath>
#include <limits>

// cfg_ is the [alerts] section (alerts_section): thresholds and window_s.
namespace fw::server {

namespace {

/// newest - oldest; a histogram whose bounds changed (not expected) counts from zero.
histogram_metric::snapshot delta(const histogram_metric::snapshot& now, const histogram_metric::snapshot& then) {
  histogram_metric::snapshot d = now;
  if (then.bounds != now.bounds || then.count > now.count) return d;
  for (size_t i = 0; i < d.cumulative.size(); ++i) d.cumulative[i] -= then.cumulative[i];
  d.count -= then.count;
  d.sum -= then.sum;
  return d;
}

constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double min_drafted = 20;

}  // namespace

double alert_monitor::quantile(double q, const histogram_metric::snapshot& h) {
  if (h.count == 0) return nan;
  const double rank = q * static_cast<double>(h.count);
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    const double c = static_cast<double>(h.cumulative[i]);
    if (c >= rank) {
      const double lo = i == 0 ? 0.0 : h.bounds[i - 1];
      const double below = i == 0 ? 0.0 : static_cast<double>(h.cumulative[i - 1]);
      const double in_bucket = c - below;
      if (in_bucket <= 0) return h.bounds[i];
      return lo + (h.bounds[i] - lo) * (rank - below) / in_bucket;
    }
  }
  return h.bounds.empty() ? nan : h.bounds.back();  // in the +Inf bucket: the largest finite bound
}

std::vector<alert_status> alert_monitor::evaluate(const alert_reading& now) {
  window_.push_back(now);
  // Keep one reading at or before the window's start as the base.
  while (window_.size() > 2 && window_[1].now_s <= now.now_s - cfg_.window_s) window_.pop_front();
  const bool has_base = window_.size() > 1;
  const alert_reading zero{};
  const alert_reading& base = has_base ? window_.front() : zero;

  std::vector<alert_status> out;
  const double drafted = now.draft_tokens - base.draft_tokens;
  const double accepted = now.accepted_tokens - base.accepted_tokens;
  alert_status acc{"spec_acceptance_low", false, nan, cfg_.min_acceptance_rate};
  if (drafted >= min_drafted) {
    acc.value = accepted / drafted;
    acc.firing = acc.value < cfg_.min_acceptance_rate;
  }
  out.push_back(acc);

  auto latency = [&](const char* name, const histogram_metric::snapshot& n, const histogram_metric::snapshot& b,
                     double slo) {
    alert_status s{name, false, nan, slo};
    s.value = quantile(0.99, has_base ? delta(n, b) : n);
    s.firing = !std::isnan(s.value) && s.value > slo;
    out.push_back(s);
  };
  latency("ttft_p99_high", now.ttft, base.ttft, cfg_.ttft_p99_slo_s);
  latency("tpot_p99_high", now.tpot, base.tpot, cfg_.tpot_p99_slo_s);
  const auto p2d = has_base ? delta(now.prefill_to_decode, base.prefill_to_decode) : now.prefill_to_decode;
  alert_status hand_off{"prefill_to_decode_high", false, nan, cfg_.max_prefill_to_decode_s};
  if (p2d.count > 0) {
    hand_off.value = p2d.sum / static_cast<double>(p2d.count);
    hand_off.firing = hand_off.value > cfg_.max_prefill_to_decode_s;
  }
  out.push_back(hand_off);
  return out;
}

}  // namespace fw::server
