#include "runtime/base/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <utility>

namespace fw {
namespace {

std::atomic<int> level_{static_cast<int>(log_level::info)};
std::mutex sink_mutex_;
log_sink sink_;  // guarded by sink_mutex_

}  // namespace

void set_log_level(log_level level) { level_.store(static_cast<int>(level)); }
log_level current_log_level() { return static_cast<log_level>(level_.load()); }
bool log_enabled(log_level level) { return static_cast<int>(level) >= level_.load(); }

std::string_view to_string(log_level level) {
  switch (level) {
    case log_level::debug: return "debug";
    case log_level::info: return "info";
    case log_level::warn: return "warning";
    case log_level::error: return "error";
  }
  return "?";
}

void log(log_level level, std::string_view text) {
  if (!log_enabled(level)) return;
  std::lock_guard lock(sink_mutex_);
  if (sink_) {
    sink_(level, text);
    return;
  }
  write_log_line(level, text);
}

void write_log_line(log_level level, std::string_view text) {
  const std::string line = "flywheel: " + std::string(to_string(level)) + ": " + std::string(text) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

log_sink set_log_sink(log_sink sink) {
  std::lock_guard lock(sink_mutex_);
  return std::exchange(sink_, std::move(sink));
}

}  // namespace fw
