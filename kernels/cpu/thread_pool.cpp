#include "kernels/cpu/thread_pool.hpp"

#include <immintrin.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>

namespace fw::cpu {
namespace {
// Busy-wait budget before yielding the core, and yields before sleeping. When the machine is
// oversubscribed a waiting thread must give its core to the thread it waits for.
constexpr int spin_iterations = 2000;
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
    generation_.fetch_add(1);
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
  active_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    // The release of the new generation publishes the job fields above.
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  if (sleepers_.load(std::memory_order_acquire) > 0) wake_.notify_all();
  work(0);
  spin_then_yield([&] { return active_.load(std::memory_order_acquire) == 0; });
}

void thread_pool::worker_loop(int thread) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int i = 0; g == seen && i < spin_iterations; ++i) {
      _mm_pause();
      g = generation_.load(std::memory_order_acquire);
    }
    for (int i = 0; g == seen && i < yield_iterations; ++i) {
      std::this_thread::yield();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      sleepers_.fetch_sub(1);
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load()) return;
    work(thread);
    active_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace fw::cpu
