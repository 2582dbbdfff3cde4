#include "runtime/base/priority_gate.hpp"

#include <thread>

namespace fw {

// An uncontended lock is one mutex acquisition (forward passes hold the gate for milliseconds;
// a condition variable on every forward cost measurably). Normal lockers step aside while an
// urgent one waits: they check before locking and again after, and give the mutex back when an
// urgent locker arrived in between.
void priority_gate::lock(bool urgent) {
  if (urgent && prioritize_) {
    urgent_waiting_.fetch_add(1);
    m_.lock();
    urgent_waiting_.fetch_sub(1);
    if (normal_waiting_.load() > 0) yielded_.fetch_add(1);  // granted ahead of waiting normal locks
    return;
  }
  normal_waiting_.fetch_add(1);
  for (;;) {
    if (prioritize_)
      while (urgent_waiting_.load() > 0) std::this_thread::yield();
    m_.lock();
    if (!prioritize_ || urgent_waiting_.load() == 0) break;
    m_.unlock();  // an urgent locker arrived while this one waited for the mutex
    std::this_thread::yield();
  }
  normal_waiting_.fetch_sub(1);
}

void priority_gate::unlock() { m_.unlock(); }

uint32_t priority_gate::waiting() const { return urgent_waiting_.load() + normal_waiting_.load(); }

uint64_t priority_gate::yielded() const { return yielded_.load(); }

}  // namespace fw
