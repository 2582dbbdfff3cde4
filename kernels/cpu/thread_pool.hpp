// thread_pool: a persistent set of worker threads for kernels (no thread creation per op).
// The calling thread takes part in every job, so a pool of n threads starts n - 1 workers.
// Workers spin briefly between jobs (decode issues hundreds of small jobs per token) and then
// sleep on a condition variable. A job waits only for the workers that joined it while it was
// open: a worker that wakes after the caller finished the tasks stays out of it. Threads may be
// pinned to given CPUs (a device's cores). Thread-safety: run() may be called from several threads
// (backends sharing one pool); jobs are serialized. It must not be called re-entrantly from a job.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace fw::cpu {

class thread_pool {
 public:
  /// A job: called as fn(ctx, task, thread) for each task in [0, n_tasks).
  using task_fn = void (*)(void* ctx, int64_t task, int thread);

  /// cores: pin thread i (the caller of run() is thread 0) to cores[i % size]; empty: no pinning.
  explicit thread_pool(int n_threads, std::vector<int> cores = {});
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  int size() const { return n_threads_; }
  const std::vector<int>& cores() const { return cores_; }
  /// Pins the calling thread to one CPU; false when the OS refuses (no such CPU, no permission).
  static bool pin_this_thread(int core);

  /// Runs fn for every task; tasks are handed out dynamically. Returns when all are done.
  void run(int64_t n_tasks, task_fn fn, void* ctx);

  /// Convenience: f(task, thread) for every task.
  template <class F>
  void for_each(int64_t n_tasks, F&& f) {
    run(n_tasks, [](void* c, int64_t t, int th) { (*static_cast<F*>(c))(t, th); }, &f);
  }

  /// Splits [0, n) into contiguous ranges, at least `grain` long, up to `ranges_per_thread` per
  /// thread (handed out in order, dynamically): f(begin, end, thread).
  template <class F>
  void parallel_for(int64_t n, int64_t grain, F&& f, int ranges_per_thread = 4) {
    if (n <= 0) return;
    int64_t chunks = std::min<int64_t>(int64_t{n_threads_} * ranges_per_thread, (n + grain - 1) / grain);
    if (chunks < 1) chunks = 1;
    if (n_threads_ == 1 || chunks == 1) { f(int64_t{0}, n, 0); return; }
    const int64_t step = (n + chunks - 1) / chunks;
    for_each(chunks, [&](int64_t c, int th) {
      const int64_t b = c * step, e = std::min(n, b + step);
      if (b < e) f(b, e, th);
    });
  }

 private:
  void worker_loop(int thread);
  void work(int thread);

  void pin_caller();  ///< once per calling thread, when cores are given

  int n_threads_;
  std::vector<int> cores_;
  std::vector<std::thread> workers_;
  // The current job: [generation: 32 bits | closed: 1 bit | workers joined: 31 bits]. One word, so a
  // worker joins (fetch_add) and learns whether the job is still open in one step.
  static constexpr uint64_t closed_bit = uint64_t{1} << 31;
  static constexpr uint64_t joined_mask = closed_bit - 1;
  static uint32_t generation_of(uint64_t state) { return static_cast<uint32_t>(state >> 32); }
  std::atomic<uint64_t> state_{0};
  std::atomic<int64_t> next_task_{0};
  std::atomic<uint64_t> left_{0};  ///< workers that joined the current job and are done with it
  std::atomic<bool> stop_{false};
  int64_t n_tasks_ = 0;
  task_fn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::mutex mutex_;
  std::mutex job_mutex_;  ///< one job at a time
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
};

}  // namespace fw::cpu
