// rollout_section: [rollout], the staged rollout of the levers with its circuit breaker
// (runtime/supervise/rollout_breaker). Read by runtime/setup into the engine's limits.
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <vector>

namespace fw {

struct rollout_section {
  bool enabled = false;  ///< off: every request gets every configured lever
  /// Percent of the traffic stage 2, 3, 4 serves while it rolls out (the rest: the stage before).
  /// Stage 1 (quantization) is the model file itself: it serves every request.
  std::vector<int> shares_pct = {30, 70, 100};
  uint32_t start_stage = 1;
  double p99_ratio = 1.2;
  double max_error_rate = 0.005;
  double max_draft_failure = 0.15;
  uint32_t min_requests = 20;
  uint32_t advance_after = 50;
  double cooldown_s = 60;
  bool operator==(const rollout_section&) const = default;
};

}  // namespace fw
