// progress_line: one line of progress for a long step (loading a model, starting the runtime):
// "label ..." at once, the elapsed seconds refreshed every 100 ms while the stream is a terminal,
// then "label ... done in 0.42 s" (or the failure). Used by `flywheel console`. Log lines written
// while it is open (runtime/base/log) never share its line: each goes on a line of its own above,
// and "label ..." is written again below it.
// Thread-safety: one owner; the refresh thread and log lines from any thread write under mutex_.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "runtime/base/log.hpp"

namespace fw::console {

class progress_line {
 public:
  progress_line(std::FILE* stream, std::string label);
  ~progress_line();
  progress_line(const progress_line&) = delete;
  progress_line& operator=(const progress_line&) = delete;

  /// Ends the line with result ("done", "failed"), adding the elapsed time; returns the seconds.
  double finish(std::string_view result);

 private:
  void refresh_loop();
  void log_above(log_level level, std::string_view text);

  std::FILE* stream_;
  std::string label_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool done_ = false;  // GUARDED_BY(mutex_)
  bool refresher_started_ = false;
  std::thread refresher_;
  log_sink previous_sink_;  ///< restored by finish()
};

}  // namespace fw::console
