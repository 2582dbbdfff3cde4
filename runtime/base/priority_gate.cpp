#include "runtime/base/priority_gate.hpp"

namespace fw {

void priority_gate::lock(bool urgent) {
  std::unique_lock l(m_);
  urgent = urgent && prioritize_;
  if (urgent) {
    ++urgent_waiting_;
    cv_.wait(l, [&] { return !held_; });
    --urgent_waiting_;
    if (normal_waiting_ > 0) ++yielded_;  // granted ahead of waiting normal locks
  } else {
    ++normal_waiting_;
    cv_.wait(l, [&] { return !held_ && urgent_waiting_ == 0; });
    --normal_waiting_;
  }
  held_ = true;
}

void priority_gate::unlock() {
  {
    std::lock_guard l(m_);
    held_ = false;
  }
  cv_.notify_all();
}

uint32_t priority_gate::waiting() const {
  std::lock_guard l(m_);
  return urgent_waiting_ + normal_waiting_;
}

uint64_t priority_gate::yielded() const {
  std::lock_guard l(m_);
  return yielded_;
}

}  // namespace fw
