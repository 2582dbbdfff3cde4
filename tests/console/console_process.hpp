// Helpers for the console tests that drive the real `flywheel` binary: run it with a script on a
// pipe (stdout, stderr and exit code apart), or on a pseudo-terminal (forkpty) to type into it and
// read what it shows. Every wait has a deadline; a child still running at the end is killed.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fw::test {

inline std::string flywheel_binary() { return std::string(FW_BINARY_DIR) + "/tools/flywheel"; }
inline std::string real_model_file() { return std::string(FW_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf"; }
inline std::string default_config() { return std::string(FW_SOURCE_DIR) + "/conf/default.toml"; }

#define FW_REQUIRE_CONSOLE()                                                                        \
  do {                                                                                              \
    if (!std::filesystem::exists(::fw::test::real_model_file()))                                    \
      GTEST_SKIP() << "real model not found at " << ::fw::test::real_model_file()                  \
                   << " (run scripts/setup.sh)";                                                    \
    ASSERT_TRUE(std::filesystem::exists(::fw::test::flywheel_binary())) << ::fw::test::flywheel_binary(); \
  } while (0)

struct process_result {
  int exit_code = -1;  ///< -1: killed by a signal or the deadline
  bool timed_out = false;
  std::string out, err;
};

namespace detail {

inline std::vector<char*> argv_of(std::vector<std::string>& args) {
  std::vector<char*> v;
  for (auto& a : args) v.push_back(a.data());
  v.push_back(nullptr);
  return v;
}

}  // namespace detail

/// Runs args (args[0] is the program) in FW_SOURCE_DIR with `input` on stdin; collects both outputs.
inline process_result run_process(std::vector<std::string> args, const std::string& input,
                                  std::chrono::seconds deadline = std::chrono::seconds(120)) {
  process_result r;
  int in[2], out[2], err[2];
  if (pipe(in) != 0 || pipe(out) != 0 || pipe(err) != 0) return r;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    if (chdir(FW_SOURCE_DIR) != 0) _exit(126);
    auto argv = detail::argv_of(args);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // The scripts are small: they fit the pipe's buffer, so write all and close (EOF ends the console).
  size_t off = 0;
  while (off < input.size()) {
    const ssize_t n = write(in[1], input.data() + off, input.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  close(in[1]);
  const auto end = std::chrono::steady_clock::now() + deadline;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(left.count())) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// The console on a pseudo-terminal: type into it, wait for what it shows.
class pty_session {
 public:
  explicit pty_session(std::vector<std::string> args) {
    winsize ws{};
    ws.ws_row = 40;
    ws.ws_col = 200;
    pid_ = forkpty(&fd_, nullptr, nullptr, &ws);
    if (pid_ == 0) {
      if (chdir(FW_SOURCE_DIR) != 0) _exit(126);
      setenv("TERM", "xterm", 1);
      auto argv = detail::argv_of(args);
      execv(argv[0], argv.data());
      _exit(127);
    }
    if (fd_ >= 0) fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
  }

  ~pty_session() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }

  [[nodiscard]] bool started() const { return pid_ > 0 && fd_ >= 0; }

  void type(const std::string& keys) {
    size_t off = 0;
    while (off < keys.size()) {
      const ssize_t n = write(fd_, keys.data() + off, keys.size() - off);
      if (n > 0) off += static_cast<size_t>(n);
      else std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  /// Reads until `text` appears after position `from` of the screen log; true when it did.
  bool wait_for(const std::string& text, size_t from = 0, std::chrono::milliseconds deadline = std::chrono::seconds(60)) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (screen_.find(text, from) == std::string::npos) {
      if (std::chrono::steady_clock::now() > end) return false;
      if (!pump(50)) return screen_.find(text, from) != std::string::npos;
    }
    return true;
  }

  /// Reads whatever arrives for a while.
  void drain(std::chrono::milliseconds d) {
    const auto end = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < end)
      if (!pump(20)) break;
  }

  /// Waits for the process to end; its exit code, or -1 (signal, deadline).
  int wait_exit(std::chrono::seconds deadline = std::chrono::seconds(30)) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    int status = 0;
    while (std::chrono::steady_clock::now() < end) {
      pump(20);
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
    }
    return -1;
  }

  [[nodiscard]] const std::string& screen() const { return screen_; }
  [[nodiscard]] size_t mark() const { return screen_.size(); }

 private:
  // false when the terminal closed.
  bool pump(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return true;
    char buf[4096];
    const ssize_t n = read(fd_, buf, sizeof buf);
    if (n > 0) {
      screen_.append(buf, static_cast<size_t>(n));
      return true;
    }
    return n < 0 && errno == EAGAIN;
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  bool exited_ = false;
  std::string screen_;
};

}  // namespace fw::test
