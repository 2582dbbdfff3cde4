// progress_line: one line of progress for a long step (loading a model, starting the runtime):
// "label ..." at once, the elapsed seconds refreshed every 100 ms while the stream is a terminal,
// then "label ... done in 0.42 s" (or the failure). Used by `flywheel console`.
// Thread-safety: one owner; the refresh thread only writes the elapsed time until finish().
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

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

  std::FILE* stream_;
  std::string label_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool done_ = false;  // GUARDED_BY(mutex_)
  bool refresher_started_ = false;
  std::thread refresher_;
};

}  // namespace fw::console
