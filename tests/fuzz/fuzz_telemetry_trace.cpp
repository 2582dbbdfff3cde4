// libFuzzer target: the telemetry trace of drills (CSV "time_s,device,metric,value") on arbitrary
// text. A trace it accepts keeps its promise: times never go backwards and are finite.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/supervise/telemetry_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto trace = fw::parse_telemetry_trace(text, "fuzz.csv");
  if (!trace) return 0;
  double last = -INFINITY;
  for (const auto& s : *trace) {
    if (!std::isfinite(s.t_s) || s.t_s < last) __builtin_trap();
    last = s.t_s;
  }
  return 0;
}
