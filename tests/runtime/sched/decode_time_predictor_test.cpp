// The decode-time model t = a*L + b*N on fabricated steps: it recovers known coefficients from
// noisy steps, follows a device that slows down (forgetting), refuses to guess from one context
// size, and turns a TPOT target into how many sequences may join.
#include "runtime/sched/decode_time_predictor.hpp"

#include <gtest/gtest.h>

#include <random>

namespace fw {
namespace {

constexpr double N = 30;

TEST(decode_time_predictor_test, recovers_the_coefficients_of_noisy_steps) {
  decode_time_predictor p(1.0);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> rows_of(1, 16), ctx_of(16, 2048);
  std::normal_distribution<double> noise(0, 2e-5);
  const double a = 2e-7, b = 1.5e-4;  // 0.2 us per context token, 150 us per layer-row
  for (int i = 0; i < 500; ++i) {
    const int rows = rows_of(rng);
    double sum = 0;
    for (int r = 0; r < rows; ++r) sum += ctx_of(rng);
    p.observe(sum, rows, N, a * sum + b * N * rows + noise(rng));
  }
  ASSERT_TRUE(p.fitted());
  EXPECT_NEAR(p.a(), a, 0.05 * a);
  EXPECT_NEAR(p.b(), b, 0.02 * b);
  EXPECT_NEAR(p.step_seconds(8 * 1000, 8, N), a * 8000 + b * N * 8, 1e-4);
  EXPECT_EQ(p.steps(), 500u);
}

TEST(decode_time_predictor_test, one_context_size_is_not_enough_and_bad_samples_are_ignored) {
  decode_time_predictor p;
  for (int i = 0; i < 10; ++i) p.observe(100, 1, N, 0.01);
  EXPECT_FALSE(p.fitted()) << "a and b cannot be told apart from one shape";
  EXPECT_EQ(p.step_seconds(100, 1, N), 0.0);
  p.observe(100, 0, N, 0.01);  // no rows
  p.observe(100, 1, N, -1);    // a negative time
  EXPECT_EQ(p.steps(), 10u);
  EXPECT_EQ(p.room(100, 1, N, 100, 0.001), std::numeric_limits<uint32_t>::max()) << "no opinion yet";
}

TEST(decode_time_predictor_test, forgetting_follows_a_device_that_slows_down) {
  decode_time_predictor p(0.9);
  for (int i = 0; i < 200; ++i) {
    const double sum = 100.0 * (1 + i % 7), rows = 1 + i % 3;
    p.observe(sum, rows, N, 1e-6 * sum + 1e-4 * N * rows);
  }
  EXPECT_NEAR(p.b(), 1e-4, 1e-6);
  for (int i = 0; i < 200; ++i) {  // throttled: twice as slow
    const double sum = 100.0 * (1 + i % 7), rows = 1 + i % 3;
    p.observe(sum, rows, N, 2 * (1e-6 * sum + 1e-4 * N * rows));
  }
  EXPECT_NEAR(p.b(), 2e-4, 2e-6);
  EXPECT_NEAR(p.a(), 2e-6, 2e-7);
}

TEST(decode_time_predictor_test, room_turns_a_target_into_sequences) {
  decode_time_predictor p(1.0);
  for (int i = 1; i <= 20; ++i) p.observe(100.0 * i, i % 4 + 1, N, 1e-5 * 100 * i + 1e-4 * N * (i % 4 + 1));
  ASSERT_TRUE(p.fitted());
  // One sequence of 500 tokens costs 1e-5 * 500 + 1e-4 * 30 = 8 ms; the batch now costs
  // 1e-5 * 1000 + 1e-4 * 30 * 2 = 16 ms. A 40 ms target leaves 24 ms: 3 more.
  EXPECT_EQ(p.room(1000, 2, N, 500, 0.040), 3u);
  EXPECT_EQ(p.room(1000, 2, N, 500, 0.016), 0u);
  EXPECT_EQ(p.room(0, 0, N, 500, 0.008), 1u);
}

}  // namespace
}  // namespace fw
