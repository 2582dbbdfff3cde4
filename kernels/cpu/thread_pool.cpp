#include "kernels/cpu/thread_pool.hpp"

#include <immintrin.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>

namespace fw::cpu {
namespace {
// Busy-wait budget before yielding the core, and yields before sleeping. When the machine is
// oversubscribed a waiting thread must give its core to the thread it waits for.
constexpr int spin_iterations = 100;
constexpr int yield_iterations = 2000;

template <class Done>
void spin_then_yield(Done done) {
  for (int i = 0; i < spin_iterations; ++i) {
    if (done()) return;
    _mm_pause();
  }
  while (!done()) std::this_thread::yield();
}
}

thread_pool::thread_pool(int n_threads, std::vector<int> cores)
    : n_threads_(std::max(1, n_threads)), cores_(std::move(cores)) {
  workers_.reserve(n_threads_ - 1);
  for (int t = 1; t < n_threads_; ++t)
    workers_.emplace_back([this, t] {
      if (!cores_.empty()) pin_this_thread(cores_[static_cast<size_t>(t) % cores_.size()]);
      worker_loop(t);
    });
}

bool thread_pool::pin_this_thread(int core) {
  if (core < 0 || core >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

void thread_pool::pin_caller() {
  // The last pool that pinned this thread; a thread serving one device keeps its pin.
  thread_local const thread_pool* pinned_for = nullptr;
  if (cores_.empty() || pinned_for == this) return;
  pin_this_thread(cores_.front());
  pinned_for = this;
}

thread_pool::~thread_pool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    state_.store(uint64_t{generation_of(state_.load()) + 1} << 32 | closed_bit);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void thread_pool::work(int thread) {
  for (;;) {
    const int64_t t = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (t >= n_tasks_) break;
    fn_(ctx_, t, thread);
  }
}

void thread_pool::run(int64_t n_tasks, task_fn fn, void* ctx) {
  if (n_tasks <= 0) return;
  std::lock_guard job_lock(job_mutex_);
  pin_caller();
  if (n_threads_ == 1 || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(ctx, t, 0);
    return;
  }
  n_tasks_ = n_tasks;
  fn_ = fn;
  ctx_ = ctx;
  next_task_.store(0, std::memory_order_relaxed);
  left_.store(0, std::memory_order_relaxed);
  {
    // The release of the new generation (open, nobody joined) publishes the job fields above.
    std::lock_guard<std::mutex> lock(mutex_);
    state_.store(uint64_t{generation_of(state_.load(std::memory_order_relaxed)) + 1} << 32,
                 std::memory_order_release);
  }
  if (sleepers_.load(std::memory_order_acquire) > 0) wake_.notify_all();
  work(0);
  // Close the job: a worker that joins from now on finds it closed and touches nothing, so the
  // caller waits only for those that joined in time (a worker the OS has not run yet, e.g. on an
  // oversubscribed machine, no longer holds up every job until it is scheduled).
  const uint64_t s = state_.fetch_or(closed_bit, std::memory_order_acq_rel);
  const uint64_t joined = s & joined_mask;
  spin_then_yield([&] { return left_.load(std::memory_order_acquire) == joined; });
}

void thread_pool::worker_loop(int thread) {
  uint32_t seen = 0;
  // A new job, or the pool is stopping (a worker may have joined the stop's generation already).
  const auto fresh = [&] {
    return generation_of(state_.load(std::memory_order_acquire)) != seen || stop_.load(std::memory_order_acquire);
  };
  for (;;) {
    bool ready = fresh();
    for (int i = 0; !ready && i < spin_iterations; ++i) {
      _mm_pause();
      ready = fresh();
    }
    for (int i = 0; !ready && i < yield_iterations; ++i) {
      std::this_thread::yield();
      ready = fresh();
    }
    if (!ready) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, fresh);
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    // Join the newest job; its fields are read only when it was still open.
    const uint64_t s = state_.fetch_add(1, std::memory_order_acq_rel);
    seen = generation_of(s);
    if (s & closed_bit) continue;
    work(thread);
    left_.fetch_add(1, std::memory_order_release);
  }
}

}  // namespace fw::cpu
