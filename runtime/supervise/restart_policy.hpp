// restart_policy: when the supervisor restarts a worker that died, as pure code (no clock, no
// actors: callers pass the time). Crashes are counted in a sliding window; the n-th crash in the
// window waits backoff_s * 2^(n-1) (at most backoff_max_s) before the restart, so a worker that
// dies on every message does not spin. More than max_restarts crashes in the window escalate:
// the device is marked down for down_s (its prompts go co-located where a pair allows; its
// requests wait and are re-admitted when it returns), and the window starts over. One policy
// per worker. Tested with fabricated crash times (tests/runtime/supervise/restart_policy_test.cpp).
// Thread-safety: none; one owner (the supervisor actor).
#pragma once

#include <cstdint>
#include <deque>

namespace fw {

struct restart_limits {
  double backoff_s = 0.01;      ///< wait before the first restart in a window
  double backoff_max_s = 2.0;   ///< the longest wait between a crash and its restart
  uint32_t max_restarts = 10;   ///< crashes in the window before the device is marked down
  double window_s = 60;         ///< the sliding window crashes are counted in
  double down_s = 30;           ///< how long a device marked down stays down before a retry
};

struct restart_decision {
  double delay_s = 0;       ///< restart after this long
  bool escalate = false;    ///< the device is marked down (delay_s is then down_s)
  uint32_t recent = 0;      ///< crashes in the window, this one included
};

class restart_policy {
 public:
  explicit restart_policy(restart_limits limits = {}) : limits_(limits) {}

  /// The worker died at now_s: when to restart it.
  restart_decision crashed(double now_s);

  [[nodiscard]] uint64_t crashes() const { return crashes_; }
  [[nodiscard]] uint64_t escalations() const { return escalations_; }
  [[nodiscard]] const restart_limits& limits() const { return limits_; }

 private:
  restart_limits limits_;
  std::deque<double> recent_;  ///< crash times inside the window
  uint64_t crashes_ = 0, escalations_ = 0;
};

}  // namespace fw
