// telemetry_feed: a telemetry source the supervisor polls next to the built-in thermal zones,
// e.g. a telemetry_source plugin (NVML on a GPU host). Thread-safety: called from one thread
// (the supervisor actor).
#pragma once

#include <string>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/supervise/telemetry_sample.hpp"

namespace fw {

class telemetry_feed {
 public:
  virtual ~telemetry_feed() = default;
  /// "telemetry_nvml 1.0.0: NVML 12.560, 2 GPUs": what it reads, for `:health`.
  [[nodiscard]] virtual std::string describe() const = 0;
  /// One reading, stamped now_s; an error when the source failed this time.
  virtual expected<std::vector<telemetry_sample>> sample(double now_s) = 0;
};

}  // namespace fw
