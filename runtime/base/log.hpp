// log: the runtime's diagnostic messages (warnings about plugins, ignored KV errors, fallbacks)
// on stderr, filtered by one process-wide level ([logging] level, set by runtime/setup).
// Messages go out as "flywheel: <level>: <text>" lines. A sink can be installed (tests capture
// lines). Thread-safety: every function may be called from any thread; one line is written
// atomically.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace fw {

enum class log_level { debug = 0, info = 1, warn = 2, error = 3 };

/// Messages below `level` are dropped (default: info).
void set_log_level(log_level level);
[[nodiscard]] log_level current_log_level();
[[nodiscard]] bool log_enabled(log_level level);

/// Writes one line when level is enabled.
void log(log_level level, std::string_view text);
inline void log_debug(std::string_view t) { log(log_level::debug, t); }
inline void log_info(std::string_view t) { log(log_level::info, t); }
inline void log_warn(std::string_view t) { log(log_level::warn, t); }
inline void log_error(std::string_view t) { log(log_level::error, t); }

/// Writes "flywheel: <level>: <text>" to stderr, as log() does without a sink (a sink that only
/// rearranges the screen, like the console's progress line, passes lines on here).
void write_log_line(log_level level, std::string_view text);

/// Replaces stderr as the destination (empty function: back to stderr); returns the old sink.
using log_sink = std::function<void(log_level, std::string_view)>;
log_sink set_log_sink(log_sink sink);

[[nodiscard]] std::string_view to_string(log_level level);

}  // namespace fw
