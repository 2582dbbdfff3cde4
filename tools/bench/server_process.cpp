#include "tools/bench/server_process.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "tools/bench/http_stream_client.hpp"

namespace fw::cli {

namespace {

/// A loopback port nobody listens on now (bound and released: a small race, fine for a bench).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

std::string tail_of(const std::string& path, size_t bytes = 1500) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > bytes ? "..." + s.substr(s.size() - bytes) : s;
}

}  // namespace

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("flywheel") : p.string();
}

namespace {

/// The children started and not yet reaped, for the signal handler (lock-free, async-signal-safe
/// to read). More than its slots at once are not tracked (no benchmark starts that many).
std::array<std::atomic<pid_t>, 16> live_children{};
static_assert(std::atomic<pid_t>::is_always_lock_free);

void remember_child(pid_t pid) {
  for (auto& c : live_children) {
    pid_t none = 0;
    if (c.compare_exchange_strong(none, pid)) return;
  }
}

void forget_child(pid_t pid) {
  for (auto& c : live_children) {
    pid_t was = pid;
    if (c.compare_exchange_strong(was, 0)) return;
  }
}

void kill_children_then_die(int sig) {
  for (auto& c : live_children)
    if (const pid_t pid = c.load(); pid > 0) ::kill(pid, SIGKILL);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

/// fork + exec of `exe args...` with stdout and stderr to log_path, stdin from /dev/null; -1 on
/// failure. Everything the child needs is made before fork (no allocation between fork and exec).
pid_t spawn_logged(const std::string& exe, const std::vector<std::string>& args, const std::string& log_path) {
  std::vector<const char*> argv = {exe.c_str()};
  for (const auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid > 0) remember_child(pid);
  if (pid != 0) return pid;
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (log >= 0) {
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::close(log);
  }
  const int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0) ::dup2(null, STDIN_FILENO);
  ::execv(exe.c_str(), const_cast<char* const*>(argv.data()));
  std::_Exit(127);
}

std::string exit_text(int status) {
  return WIFEXITED(status) ? "code " + std::to_string(WEXITSTATUS(status)) : "signal " + std::to_string(WTERMSIG(status));
}

}  // namespace

expected<server_process> server_process::start_prefill_node(const std::string& exe, const std::string& config_path,
                                                            uint16_t port, const std::string& log_path,
                                                            double ready_timeout_s) {
  std::error_code ec;
  const auto size0 = std::filesystem::exists(log_path) ? std::filesystem::file_size(log_path, ec) : 0;
  const std::string listen = "127.0.0.1:" + std::to_string(port == 0 ? free_port() : port);
  const pid_t pid = spawn_logged(exe, {"serve", "--config", config_path, "--role", "prefill", "--listen", listen}, log_path);
  if (pid < 0) return make_error(errc::io_error, "fork failed");
  server_process p(pid, listen, log_path);
  auto ready = p.wait_ready("flywheel serve --role prefill --listen " + listen, ready_timeout_s, [&] {
    std::ifstream in(log_path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(size0));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str().find("prefill node listening on") != std::string::npos;
  });
  if (!ready) return ready.err();
  return p;
}

expected<void> server_process::wait_ready(const std::string& what, double timeout_s, const std::function<bool()>& ready) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      forget_child(std::exchange(pid_, -1));
      return make_error(errc::io_error, what + " exited (" + exit_text(status) + ") before it was ready; its log " + log_ +
                                            ":\n" + tail_of(log_));
    }
    if (ready()) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stop(1);
  return make_error(errc::timed_out, what + " was not ready within " + std::to_string(static_cast<int>(timeout_s)) +
                                         " s; its log " + log_ + ":\n" + tail_of(log_));
}

void server_process::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  forget_child(pid_);  // before the wait: a reaped pid may be reused
  int status = 0;
  ::waitpid(std::exchange(pid_, -1), &status, 0);
}

void server_process::kill_children_on_signals() {
  struct sigaction sa {};
  sa.sa_handler = kill_children_then_die;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    struct sigaction was {};
    if (sigaction(sig, nullptr, &was) == 0 && was.sa_handler == SIG_IGN) continue;  // nohup, a background job
    sigaction(sig, &sa, nullptr);
  }
}

expected<server_process> server_process::start(const std::string& exe, const std::string& config_path,
                                               const std::string& log_path, double ready_timeout_s) {
  const int port = free_port();
  if (port == 0) return make_error(errc::io_error, "no free loopback port for a server");
  const std::string port_text = std::to_string(port);
  std::filesystem::remove(log_path);
  const pid_t pid = spawn_logged(exe, {"serve", "--config", config_path, "--host", "127.0.0.1", "--port", port_text}, log_path);
  if (pid < 0) return make_error(errc::io_error, "fork failed");
  server_process p(pid, "http://127.0.0.1:" + port_text, log_path);
  const endpoint ep{"127.0.0.1", port_text};
  auto ready = p.wait_ready("flywheel serve --config " + config_path, ready_timeout_s,
                            [&] { return http_get(ep, "/health", {}, 2).status == 200; });
  if (!ready) return ready.err();
  return p;
}

server_process::server_process(server_process&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), url_(std::move(o.url_)), log_(std::move(o.log_)) {}

std::map<std::string, double> server_process::metrics() const {
  std::map<std::string, double> out;
  auto ep = parse_endpoint(url_);
  if (!ep) return out;
  const auto r = http_get(*ep, "/metrics");
  if (r.status != 200) return out;
  std::istringstream in(r.body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t name_end = line.find_first_of("{ ");
    const size_t value_at = line.rfind(' ');
    if (name_end == std::string::npos || value_at == std::string::npos || value_at + 1 >= line.size()) continue;
    char* end = nullptr;
    const double v = std::strtod(line.c_str() + value_at + 1, &end);
    if (end == line.c_str() + value_at + 1) continue;
    out[line.substr(0, name_end)] += v;
  }
  return out;
}

double server_process::peak_rss_mib() const {
  if (pid_ <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  return 0;
}

void server_process::stop(double grace_s) {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  int status = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      forget_child(std::exchange(pid_, -1));
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  forget_child(std::exchange(pid_, -1));
}

}  // namespace fw::cli
