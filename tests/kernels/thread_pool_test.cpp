#include <gtest/gtest.h>

#include <atomic>
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
