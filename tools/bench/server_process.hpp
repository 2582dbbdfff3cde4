// server_process: a `flywheel serve` child process for the benchmarks that compare server
// configurations (`flywheel bench ablation`), or a prefill node for `flywheel bench soak`: started with a config file on a free loopback
// port, its stderr in a log file, ready when /health answers 200; stopped with SIGTERM (SIGKILL
// after a grace period). Reads the child's /metrics (summed per series name) and its peak
// resident memory (VmHWM). A child that exits before it is ready is an error quoting its log.
// Thread-safety: one owner.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>

#include "runtime/base/expected.hpp"

namespace fw::cli {

class server_process {
 public:
  /// Starts `exe serve --config config_path --port P` (P: a free port) and waits up to
  /// ready_timeout_s for /health.
  [[nodiscard]] static expected<server_process> start(const std::string& exe, const std::string& config_path,
                                                      const std::string& log_path, double ready_timeout_s = 600);
  /// Starts `exe serve --config config_path --role prefill --listen 127.0.0.1:PORT` (port 0: a
  /// free one) and waits up to ready_timeout_s for its "listening" line; url() is then HOST:PORT.
  /// The log is appended to (a restarted node keeps one log).
  [[nodiscard]] static expected<server_process> start_prefill_node(const std::string& exe, const std::string& config_path,
                                                                   uint16_t port, const std::string& log_path,
                                                                   double ready_timeout_s = 120);
  server_process(server_process&& o) noexcept;
  server_process& operator=(server_process&&) = delete;
  server_process(const server_process&) = delete;
  ~server_process() { stop(); }

  [[nodiscard]] const std::string& url() const { return url_; }
  [[nodiscard]] pid_t pid() const { return pid_; }
  /// Every sample of /metrics summed by series name (labels dropped; _sum/_count kept as named).
  [[nodiscard]] std::map<std::string, double> metrics() const;
  /// Peak resident memory of the process so far, MiB (0: unknown).
  [[nodiscard]] double peak_rss_mib() const;
  /// SIGTERM, then SIGKILL after grace_s; idempotent.
  void stop(double grace_s = 15);
  /// SIGKILL at once (a crash), reaped; idempotent.
  void kill9();
  /// From now on SIGTERM, SIGINT and SIGHUP (those not ignored) to this process first SIGKILL every child a
  /// server_process started and has not reaped, then end it as the signal would (a soak stopped
  /// with `kill` left its prefill node serving). Call before other handlers are installed.
  static void kill_children_on_signals();

 private:
  server_process(pid_t pid, std::string url, std::string log) : pid_(pid), url_(std::move(url)), log_(std::move(log)) {}
  /// Polls `ready` until it holds, the child exits (an error quoting its log) or timeout_s passes
  /// (the child is stopped; an error). `what` names the child in the errors.
  expected<void> wait_ready(const std::string& what, double timeout_s, const std::function<bool()>& ready);
  pid_t pid_ = -1;
  std::string url_, log_;
};

/// The running executable's path (/proc/self/exe).
std::string self_executable();

}  // namespace fw::cli
