#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/cpu/thread_pool.hpp"

namespace fw::cpu {
namespace {

TEST(thread_pool, runs_every_task_exactly_once_across_many_jobs) {
  thread_pool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  for (int job = 0; job < 200; ++job) {
    const int n = 1 + job * 5 % 1000;
    pool.for_each(n, [&](int64_t t, int thread) {
      ASSERT_GE(thread, 0);
      ASSERT_LT(thread, 3);
      hits[t].fetch_add(1);
    });
    int total = 0;
    for (int i = 0; i < 1000; ++i) total += hits[i].exchange(0);
    ASSERT_EQ(total, n) << "job " << job;
  }
}

// More workers than cores and jobs of a few microseconds: workers often wake after the caller has
// done every task and closed the job. Such a late worker must not run anything of that job (its
// fields belong to the next job by then), and every job's tasks run once, with its own context.
TEST(thread_pool, late_workers_never_touch_a_closed_job) {
  const int threads = static_cast<int>(std::max(4u, 2 * std::thread::hardware_concurrency()));
  thread_pool pool(threads);
  uint64_t ran = 0, expected = 0;
  for (int job = 0; job < 20000; ++job) {
    const int n = 2 + job % 3;
    std::array<std::atomic<int>, 5> hits{};  // this job's context, gone when run() returns
    pool.for_each(n, [&](int64_t t, int thread) {
      ASSERT_LT(thread, threads);
      hits[static_cast<size_t>(t)].fetch_add(1, std::memory_order_relaxed);
    });
    for (int t = 0; t < 5; ++t) {
      ASSERT_EQ(hits[static_cast<size_t>(t)].load(), t < n ? 1 : 0) << "job " << job << " task " << t;
      ran += static_cast<uint64_t>(hits[static_cast<size_t>(t)].load());
    }
    expected += static_cast<uint64_t>(n);
  }
  EXPECT_EQ(ran, expected);
}

// A pool destroyed right after a job: a worker that was about to join it may join the stop's
// generation instead, and must still see the stop (this hung before the stop was part of the wait).
TEST(thread_pool, a_pool_destroyed_after_its_job_stops_every_worker) {
  const int threads = static_cast<int>(std::max(4u, 2 * std::thread::hardware_concurrency()));
  for (int i = 0; i < 2000; ++i) {
    thread_pool pool(threads);
    std::atomic<int> ran{0};
    pool.for_each(2, [&](int64_t, int) { ran.fetch_add(1); });
    ASSERT_EQ(ran.load(), 2);
  }
}

TEST(thread_pool, parallel_for_covers_the_range_without_overlap) {
  thread_pool pool(2);
  for (int64_t n : {1, 2, 7, 64, 1001}) {
    std::vector<int> seen(n, 0);
    pool.parallel_for(n, 3, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) seen[i]++;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "n=" << n << " i=" << i;
  }
}

TEST(thread_pool, parallel_for_makes_at_most_the_asked_ranges_per_thread) {
  thread_pool pool(2);
  for (int per_thread : {1, 2, 4}) {
    for (int64_t n : {1, 3, 36, 1001}) {
      std::mutex m;
      std::vector<std::pair<int64_t, int64_t>> ranges;
      std::vector<int> seen(n, 0);
      pool.parallel_for(n, 1, [&](int64_t b, int64_t e, int) {
        std::lock_guard lock(m);
        ranges.emplace_back(b, e);
        for (int64_t i = b; i < e; ++i) seen[i]++;
      }, per_thread);
      ASSERT_EQ(static_cast<int64_t>(ranges.size()), std::min<int64_t>(n, 2 * per_thread)) << "n=" << n;
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "n=" << n << " i=" << i;
    }
  }
}

TEST(thread_pool, single_thread_pool_runs_inline) {
  thread_pool pool(1);
  int sum = 0;
  pool.for_each(10, [&](int64_t t, int thread) {
    EXPECT_EQ(thread, 0);
    sum += static_cast<int>(t);
  });
  EXPECT_EQ(sum, 45);
}

}  // namespace
}  // namespace fw::cpu
