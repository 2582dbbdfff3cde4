// telemetry_sample: one reading of a device's or link's health, as every telemetry source
// (sysfs thermal zones, a replayed trace, NVML) reports it and the degradation policy consumes
// it. Metrics: temperature_c, link_gbps (the link's measured bandwidth, GB/s), link_errors (a
// cumulative error/replay counter: rising = trouble), lost (1: the device is gone, 0: back).
// Thread-safety: plain value.
#pragma once

#include <string>
#include <string_view>

namespace fw {

namespace telemetry_metric {
inline constexpr std::string_view temperature_c = "temperature_c";
inline constexpr std::string_view link_gbps = "link_gbps";
inline constexpr std::string_view link_errors = "link_errors";
inline constexpr std::string_view lost = "lost";
}  // namespace telemetry_metric

struct telemetry_sample {
  double t_s = 0;      ///< seconds (a trace's own clock, or monotonic time)
  std::string device;  ///< e.g. "prefill", "decode", "cpu"
  std::string metric;  ///< one of telemetry_metric
  double value = 0;
};

}  // namespace fw
