#include "runtime/supervise/degradation_policy.hpp"

#include <algorithm>
#include <cstdio>

namespace fw {
namespace {

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

}  // namespace

const char* to_string(degradation_state s) {
  switch (s) {
    case degradation_state::healthy: return "healthy";
    case degradation_state::link_degraded: return "link-degraded";
    case degradation_state::co_located: return "co-located";
    case degradation_state::cpu_fallback: return "cpu-fallback";
  }
  return "?";
}

// The worst level over every device's latest readings (the samples just taken included).
degradation_policy::level degradation_policy::assess(const std::vector<telemetry_sample>& at_once, std::string& why) {
  namespace tm = telemetry_metric;
  level worst = level::healthy;
  auto raise = [&](level l, std::string w) {
    if (l > worst) {
      worst = l;
      why = std::move(w);
    }
  };
  for (const auto& s : at_once) {
    if (s.metric == tm::link_errors) {
      auto it = latest_.find({s.device, s.metric});
      if (it != latest_.end() && s.value > it->second)
        raise(level::degraded, s.device + " link errors rose " + fmt(it->second) + " -> " + fmt(s.value));
    }
    if (s.metric == tm::lost) lost_[s.device] = s.value != 0;
    if (s.metric == tm::link_gbps && limits_.link_nominal_gbps <= 0)
      nominal_[s.device] = std::max(nominal_[s.device], s.value);
    latest_[{s.device, s.metric}] = s.value;
  }
  for (const auto& [dev, is_lost] : lost_)
    if (is_lost) raise(level::lost, dev + " lost");
  for (const auto& [key, v] : latest_) {
    const auto& [dev, metric] = key;
    if (metric == tm::temperature_c) {
      if (v >= limits_.temp_co_located_c) raise(level::severe, dev + " at " + fmt(v) + " C");
      else if (v >= limits_.temp_degraded_c) raise(level::degraded, dev + " at " + fmt(v) + " C");
      else if (v >= limits_.temp_degraded_c - limits_.temp_hysteresis_c) raise(level::band, dev + " cooling: " + fmt(v) + " C");
    } else if (metric == tm::link_gbps) {
      const double nominal = limits_.link_nominal_gbps > 0 ? limits_.link_nominal_gbps : nominal_[dev];
      if (nominal <= 0) continue;
      const double share = v / nominal;
      const std::string what = dev + " link at " + fmt(v) + " of " + fmt(nominal) + " GB/s";
      if (share < limits_.link_co_located_share) raise(level::severe, what);
      else if (share < limits_.link_min_share) raise(level::degraded, what);
      else if (share < limits_.link_min_share + limits_.link_hysteresis_share) raise(level::band, what);
    }
  }
  return worst;
}

void degradation_policy::move_to(degradation_state to, double t_s, std::string why) {
  transitions_.push_back({t_s, state_, to, why});
  reason_ = std::move(why);
  state_ = to;
  degraded_run_ = healthy_run_ = 0;
}

bool degradation_policy::observe(const std::vector<telemetry_sample>& at_once) {
  if (at_once.empty()) return false;
  std::string why;
  const level l = assess(at_once, why);
  const telemetry_sample& s = at_once.back();
  const degradation_state before = state_;
  switch (l) {
    case level::lost:
      healthy_run_ = 0;
      if (state_ != degradation_state::cpu_fallback) move_to(degradation_state::cpu_fallback, s.t_s, why);
      break;
    case level::severe:
      healthy_run_ = 0;
      if (state_ < degradation_state::co_located) move_to(degradation_state::co_located, s.t_s, why);
      break;
    case level::degraded:
      healthy_run_ = 0;
      if (state_ == degradation_state::healthy) {
        move_to(degradation_state::link_degraded, s.t_s, why);
        degraded_run_ = 1;
      } else if (state_ == degradation_state::link_degraded && ++degraded_run_ >= limits_.sustain_samples) {
        move_to(degradation_state::co_located, s.t_s, "sustained: " + why);
      }
      break;
    case level::band:
      degraded_run_ = healthy_run_ = 0;  // neither worse nor recovered: hold
      break;
    case level::healthy:
      degraded_run_ = 0;
      if (state_ != degradation_state::healthy && ++healthy_run_ >= limits_.recover_samples)
        move_to(static_cast<degradation_state>(static_cast<uint8_t>(state_) - 1), s.t_s,
                "recovered: " + std::to_string(limits_.recover_samples) + " healthy samples");
      break;
  }
  return state_ != before;
}

}  // namespace fw
