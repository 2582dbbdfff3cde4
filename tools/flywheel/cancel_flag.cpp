#include "tools/flywheel/cancel_flag.hpp"

#include <csignal>

namespace fw::cli {
namespace {

std::atomic<bool> cancelled{false};

void on_sigint(int) {
  if (cancelled.exchange(true)) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

}  // namespace

const std::atomic<bool>& install_cancel_on_sigint() {
  static_assert(std::atomic<bool>::is_always_lock_free);
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  return cancelled;
}

}  // namespace fw::cli
