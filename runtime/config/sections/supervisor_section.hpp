// supervisor_section: [supervisor], how the supervisor restarts workers that die and re-admits
// the requests they held (runtime/supervise/restart_policy). Read by runtime/setup into the
// engine's limits. Thread-safety: plain value.
#pragma once

#include <cstdint>

namespace fw {

struct supervisor_section {
  uint32_t restart_backoff_ms = 10;        ///< wait before the first restart in a window
  uint32_t restart_backoff_max_ms = 2000;  ///< the wait doubles per crash up to this
  uint32_t max_restarts = 10;              ///< crashes in restart_window_s before the device is marked down
  double restart_window_s = 60;
  double down_s = 30;                      ///< a device marked down is retried after this
  /// A prompt whose prefill worker died while running it is retried this many times before the
  /// request fails (a prompt that crashes the worker every time must not loop forever).
  uint32_t request_retries = 2;
  bool operator==(const supervisor_section&) const = default;
};

}  // namespace fw
