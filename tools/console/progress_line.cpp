#include "tools/console/progress_line.hpp"

#include <unistd.h>

namespace fw::console {
progress_line::progress_line(std::FILE* stream, std::string label)
    : stream_(stream), label_(std::move(label)), start_(std::chrono::steady_clock::now()) {
  std::fprintf(stream_, "%s ...", label_.c_str());
  std::fflush(stream_);
  previous_sink_ = set_log_sink([this](log_level level, std::string_view text) { log_above(level, text); });
  refresher_started_ = ::isatty(::fileno(stream_)) != 0;
  if (refresher_started_) refresher_ = std::thread([this] { refresh_loop(); });
}

progress_line::~progress_line() {
  if (!done_) finish("stopped");
}

void progress_line::refresh_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_.wait_for(lock, std::chrono::milliseconds(100), [this] { return done_; })) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(stream_, "\r%s ... %.1f s", label_.c_str(), s);
    std::fflush(stream_);
  }
}

void progress_line::log_above(log_level level, std::string_view text) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (done_) {  // finish() is restoring the previous sink
    if (previous_sink_) previous_sink_(level, text);
    else write_log_line(level, text);
    return;
  }
  std::fputs("\n", stream_);  // end the progress line where it is
  std::fflush(stream_);
  if (previous_sink_) previous_sink_(level, text);
  else write_log_line(level, text);
  std::fflush(stderr);
  std::fprintf(stream_, "%s ...", label_.c_str());
  std::fflush(stream_);
}

double progress_line::finish(std::string_view result) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return 0;
    done_ = true;
  }
  set_log_sink(previous_sink_);
  stop_.notify_one();
  if (refresher_.joinable()) refresher_.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int n = static_cast<int>(result.size());
  if (refresher_started_)  // \r and the padding overwrite the refreshed elapsed time
    std::fprintf(stream_, "\r%s ... %.*s in %.2f s      \n", label_.c_str(), n, result.data(), s);
  else
    std::fprintf(stream_, " %.*s in %.2f s\n", n, result.data(), s);
  std::fflush(stream_);
  return s;
}

}  // namespace fw::console
