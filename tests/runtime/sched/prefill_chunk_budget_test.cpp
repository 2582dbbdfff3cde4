// prefill_chunk_budget (pure): chunk sizes from a least-squares fit of fabricated chunk times
// t = c + b*n + a*attended(n, start). It recovers known costs, keeps each chunk's predicted time
// within the target (so chunks shrink as the context grows), respects its bounds, and follows a
// device that slows down.
#include <gtest/gtest.h>

#include <random>

#include "runtime/sched/prefill_chunk_budget.hpp"

namespace fw {
namespace {

double attended(uint32_t start, uint32_t n) { return double(n) * start + double(n) * (n + 1) / 2; }

/// Fabricated device: 2 ms per forward, 0.1 ms per row, 50 ns per attended token.
double device_time(uint32_t start, uint32_t n, double slow = 1.0) {
  return slow * (2e-3 + 1e-4 * n + 5e-8 * attended(start, n));
}

/// Runs a prompt of `len` tokens through the budget on the fabricated device; the chunk sizes.
std::vector<uint32_t> prefill(prefill_chunk_budget& b, uint32_t len, double slow = 1.0, std::mt19937* noise = nullptr) {
  std::vector<uint32_t> sizes;
  std::normal_distribution<double> jitter(1.0, 0.03);
  for (uint32_t pos = 0; pos < len;) {
    const uint32_t n = b.next(pos, len - pos);
    double t = device_time(pos, n, slow);
    if (noise) t *= jitter(*noise);
    b.observe(pos, n, t);
    sizes.push_back(n);
    pos += n;
  }
  return sizes;
}

prefill_chunk_budget::limits budget(double target_ms, uint32_t max_chunk = 512) {
  prefill_chunk_budget::limits l;
  l.target_s = target_ms / 1000;
  l.max_chunk = max_chunk;
  return l;
}

TEST(prefill_chunk_budget, off_gives_the_fixed_chunk_and_the_remainder) {
  prefill_chunk_budget b(budget(0, 64));
  EXPECT_EQ(b.next(0, 1000), 64u);
  EXPECT_EQ(b.next(960, 40), 40u);
  EXPECT_EQ(b.next(0, 0), 1u);  // at least one row
}

TEST(prefill_chunk_budget, recovers_the_costs_and_keeps_chunks_within_the_target) {
  std::mt19937 rng(7);
  prefill_chunk_budget b(budget(20));
  for (int prompt = 0; prompt < 6; ++prompt) prefill(b, 2048, 1.0, &rng);
  ASSERT_TRUE(b.fitted());
  // Predictions within 10% of the device at short and long context.
  for (auto [start, n] : {std::pair{0u, 64u}, std::pair{1024u, 32u}, std::pair{1900u, 100u}})
    EXPECT_NEAR(b.predict(start, n), device_time(start, n), 0.1 * device_time(start, n)) << start << " " << n;
  // A fresh prompt: every chunk's true time is within the target (+ noise margin), and the
  // chunks shrink as the context grows.
  auto sizes = prefill(b, 2048);
  uint32_t pos = 0;
  for (uint32_t n : sizes) {
    EXPECT_LE(device_time(pos, n), 0.020 * 1.08) << "chunk at " << pos;
    pos += n;
  }
  EXPECT_GT(sizes.front(), sizes[sizes.size() - 2]);
  // The largest chunk that fits: one more row would pass the target (except at the bounds).
  const uint32_t n0 = b.next(0, 100000);
  EXPECT_LE(b.predict(0, n0), 0.020);
  EXPECT_GT(b.predict(0, n0 + 1), 0.020);
}

TEST(prefill_chunk_budget, respects_its_bounds_and_starts_with_the_first_chunk) {
  prefill_chunk_budget tight(budget(0.001));
  EXPECT_EQ(tight.next(0, 1000), 32u);  // not fitted yet
  tight.observe(0, 32, device_time(0, 32));
  EXPECT_EQ(tight.next(32, 1000), 16u);  // nothing fits: the smallest chunk
  prefill_chunk_budget loose(budget(10000, 300));
  loose.observe(0, 32, device_time(0, 32));
  EXPECT_EQ(loose.next(32, 1000), 300u);  // everything fits: the largest
  EXPECT_EQ(loose.next(32, 20), 20u);     // never past the prompt
}

TEST(prefill_chunk_budget, follows_a_device_that_slows_down) {
  prefill_chunk_budget b(budget(20));
  for (int i = 0; i < 4; ++i) prefill(b, 1024);
  const uint32_t before = b.next(0, 100000);
  for (int i = 0; i < 8; ++i) prefill(b, 1024, 2.0);  // twice as slow
  const uint32_t after = b.next(0, 100000);
  EXPECT_LT(after, before * 0.7) << before << " -> " << after;
  EXPECT_NEAR(b.predict(0, after), device_time(0, after, 2.0), 0.15 * device_time(0, after, 2.0));
}

}  // namespace
}  // namespace fw
