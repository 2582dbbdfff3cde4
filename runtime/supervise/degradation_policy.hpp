// degradation_policy: device and link health -> the engine's degradation state, as pure code
// (no clock, no actors: it consumes telemetry samples in order, one moment at a time). States, mildest first:
//   healthy        every lever on
//   link-degraded  a device at temp_degraded_c or more, a link below link_min_share of its
//                  nominal bandwidth, or a link error counter rising: speculation's k is capped
//                  (fewer rows per step) and, where configured, KV moves compressed
//   co-located     the same for sustain_samples samples in a row, or worse at once (temp_co_
//                  located_c, below link_co_located_share): prompts prefill on the decode device
//   cpu-fallback   a device reported lost: its work moves to the remaining device now
// Hysteresis: a sample counts as healthy only below temp_degraded_c - temp_hysteresis_c and
// above (link_min_share + link_hysteresis_share) of nominal with no new errors; recovery is
// one state at a time, each after recover_samples healthy samples in a row, so a flapping link
// holds its state. Tested with fabricated traces (tests/runtime/supervise/degradation_policy_test.cpp).
// Thread-safety: none; one owner (the supervisor actor).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/supervise/telemetry_sample.hpp"

namespace fw {

enum class degradation_state : uint8_t { healthy, link_degraded, co_located, cpu_fallback };
/// "healthy", "link-degraded", "co-located", "cpu-fallback".
const char* to_string(degradation_state s);

struct degradation_limits {
  double temp_degraded_c = 80;
  double temp_co_located_c = 90;
  double temp_hysteresis_c = 5;
  double link_nominal_gbps = 0;       ///< 0: the highest bandwidth each link has reported
  double link_min_share = 0.75;
  double link_co_located_share = 0.5;
  double link_hysteresis_share = 0.05;
  uint32_t sustain_samples = 5;       ///< degraded samples in a row before co-located
  uint32_t recover_samples = 3;       ///< healthy samples in a row per step back
  int k_cap = 2;                      ///< speculation's k while link-degraded or worse
};

struct degradation_transition {
  double t_s = 0;
  degradation_state from = degradation_state::healthy, to = degradation_state::healthy;
  std::string reason;
};

class degradation_policy {
 public:
  explicit degradation_policy(degradation_limits limits = {}) : limits_(limits) {}

  /// Takes the samples of one moment (a poll, or a trace's lines with one time) and assesses
  /// them together; returns true when the state changed (transitions().back() says how).
  bool observe(const std::vector<telemetry_sample>& at_once);

  [[nodiscard]] degradation_state state() const { return state_; }
  [[nodiscard]] const std::vector<degradation_transition>& transitions() const { return transitions_; }
  [[nodiscard]] const std::string& last_reason() const { return reason_; }
  [[nodiscard]] const degradation_limits& limits() const { return limits_; }
  /// The latest value of each (device, metric) seen.
  [[nodiscard]] const std::map<std::pair<std::string, std::string>, double>& readings() const { return latest_; }

 private:
  enum class level { healthy, band, degraded, severe, lost };
  level assess(const std::vector<telemetry_sample>& at_once, std::string& why);
  void move_to(degradation_state to, double t_s, std::string why);

  degradation_limits limits_;
  degradation_state state_ = degradation_state::healthy;
  std::map<std::pair<std::string, std::string>, double> latest_;
  std::map<std::string, double> nominal_;  ///< per link device: the highest bandwidth seen
  std::map<std::string, bool> lost_;
  uint32_t degraded_run_ = 0, healthy_run_ = 0;
  std::vector<degradation_transition> transitions_;
  std::string reason_;
};

}  // namespace fw
