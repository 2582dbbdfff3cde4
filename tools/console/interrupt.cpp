#include "tools/console/interrupt.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

namespace fw::console {
namespace {

std::atomic<bool> interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");
std::atomic<int> pipe_read{-1}, pipe_write{-1};

extern "C" void on_sigint(int) {
  interrupted.store(true, std::memory_order_relaxed);
  const int fd = pipe_write.load(std::memory_order_relaxed);
  if (fd >= 0) {
    const int saved = errno;
    const ssize_t n = ::write(fd, "i", 1);  // a full pipe already says "interrupted"
    (void)n;
    errno = saved;
  }
}

void set_mask(int how) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  pthread_sigmask(how, &set, nullptr);
}

}  // namespace

void install_interrupt_handler() {
  if (pipe_read.load() < 0) {
    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0) {
      pipe_read.store(fds[0]);
      pipe_write.store(fds[1]);
    }
  }
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking call on the console's thread returns EINTR
  sigaction(SIGINT, &sa, nullptr);
}

void block_interrupts_in_this_thread() { set_mask(SIG_BLOCK); }
void unblock_interrupts_in_this_thread() { set_mask(SIG_UNBLOCK); }

bool take_interrupt() {
  const int fd = pipe_read.load(std::memory_order_relaxed);
  if (fd >= 0) {
    char buf[64];
    while (::read(fd, buf, sizeof buf) > 0) {
    }
  }
  return interrupted.exchange(false, std::memory_order_relaxed);
}

int interrupt_fd() { return pipe_read.load(std::memory_order_relaxed); }

}  // namespace fw::console
