// telemetry_trace: a recorded or hand-written telemetry trace for drills (`:drill FILE`, tests):
// CSV lines "time_s,device,metric,value" ('#' starts a comment; an optional header line
// "time_s,device,metric,value"). Times are seconds from the trace's start and may not go
// backwards; metrics are those of telemetry_sample.hpp. A malformed trace is refused whole with
// the file, line and what is wrong; nothing is replayed. Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/supervise/telemetry_sample.hpp"

namespace fw {

/// Parses trace text; name stands for the file in messages. errc::invalid_argument.
expected<std::vector<telemetry_sample>> parse_telemetry_trace(std::string_view text, std::string_view name);
/// Reads and parses a trace file; errc::io_error when it cannot be read.
expected<std::vector<telemetry_sample>> read_telemetry_trace(const std::string& path);

}  // namespace fw
