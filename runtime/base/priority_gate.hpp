// priority_gate: a mutex with two classes of waiters. An urgent lock (a decode step) is granted
// before every waiting normal one (a prefill chunk); the holder is never preempted, so an urgent
// waiter waits for at most the one critical section in progress. With prioritize = false it is a
// plain mutex (first come, first served as the OS schedules). Used by a backend to serialize its
// forward passes: decode priority over prefill on one device (logical prefill/decode separation).
// Thread-safety: lock/unlock from any thread; not recursive.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace fw {

class priority_gate {
 public:
  explicit priority_gate(bool prioritize = true) : prioritize_(prioritize) {}
  priority_gate(const priority_gate&) = delete;
  priority_gate& operator=(const priority_gate&) = delete;

  void lock(bool urgent);
  void unlock();
  bool prioritizes() const { return prioritize_; }
  /// Threads blocked in lock() now (tests).
  uint32_t waiting() const;
  /// Urgent locks granted while normal ones were waiting (decode steps that went first).
  uint64_t yielded() const;

  /// RAII holder.
  class hold {
   public:
    hold(priority_gate& g, bool urgent) : g_(g) { g_.lock(urgent); }
    ~hold() { g_.unlock(); }
    hold(const hold&) = delete;
    hold& operator=(const hold&) = delete;

   private:
    priority_gate& g_;
  };

 private:
  const bool prioritize_;
  std::mutex m_;
  std::atomic<uint32_t> urgent_waiting_{0};
  std::atomic<uint32_t> normal_waiting_{0};
  std::atomic<uint64_t> yielded_{0};
};

}  // namespace fw
