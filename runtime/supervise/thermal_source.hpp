// thermal_source: the telemetry source of CPU devices: Linux thermal zones
// (<root>/thermal/thermal_zone*/temp) and hwmon sensors (<root>/hwmon/hwmon*/temp*_input), in
// millidegrees C. One sample per poll: the hottest sensor as device "cpu", metric
// temperature_c. A machine that exposes none (many VMs) makes available() false, and the
// supervisor says so once instead of polling. Thread-safety: none; one owner.
#pragma once

#include <string>
#include <vector>

#include "runtime/supervise/telemetry_sample.hpp"

namespace fw {

class thermal_source {
 public:
  /// root: normally /sys/class (tests pass a directory tree of their own).
  explicit thermal_source(std::string root = "/sys/class");

  [[nodiscard]] bool available() const { return !files_.empty(); }
  /// "2 thermal zones, 1 hwmon sensor under /sys/class", or why there are none.
  [[nodiscard]] std::string describe() const;
  /// The hottest sensor now; empty when none could be read.
  std::vector<telemetry_sample> sample(double now_s) const;

 private:
  std::string root_;
  std::vector<std::string> files_;
  size_t zones_ = 0, hwmon_ = 0;
};

}  // namespace fw
