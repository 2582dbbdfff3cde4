// supervisor_section: [supervisor], how the supervisor restarts workers that die and re-admits
// the requests they held (runtime/supervise/restart_policy), and how it polls device telemetry
// and degrades (runtime/supervise/degradation_policy). Read by runtime/setup into the
// engine's limits. Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/config/sections/kv_cache_section.hpp"

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
  uint32_t telemetry_poll_ms = 1000;  ///< CPU thermal zones / hwmon; 0: not polled
  /// telemetry_source plugins ([[plugins.load]] names) polled with them, e.g. telemetry_nvml.
  std::vector<std::string> telemetry_plugins;
  double temp_degraded_c = 80;        ///< a device this hot: link-degraded
  double temp_co_located_c = 90;      ///< this hot: co-located at once
  double link_nominal_gbps = 0;       ///< 0: the highest bandwidth each link reported
  double link_min_share = 0.75;       ///< a link below this share of nominal: link-degraded
  uint32_t sustain_samples = 5;       ///< degraded samples in a row before co-located
  uint32_t recover_samples = 3;       ///< healthy samples in a row per step back
  uint32_t degraded_k_cap = 2;        ///< speculation's k while degraded
  /// The KV wire while link-degraded: auto = [kv_cache] transfer (lossless stays lossless);
  /// f16 / int8 trade exactness for fewer bytes over a weak link.
  kv_transfer_type degraded_kv_transfer = kv_transfer_type::automatic;
  bool operator==(const supervisor_section&) const = default;
};

}  // namespace fw
