// offload_policy with fabricated sequences: nothing moves while the decode pool has room or
// before a sequence is long enough; the longest generation goes first; a candidate whose worst
// case does not fit the offload pool is skipped; at most max_moves per decision. For time: the
// longest move while the predicted decode step exceeds the target, each taking its share off.
#include <gtest/gtest.h>

#include "runtime/sched/offload_policy.hpp"

namespace fw {
namespace {

TEST(offload_policy_test, long_tails_move_when_the_decode_pool_is_short) {
  offload_limits lim;  // 512 tokens, below 25% free, one move
  const std::vector<offload_candidate> seqs = {
      {1, 600, 700, 100}, {2, 900, 1000, 200}, {3, 100, 200, 900}, {4, 513, 600, 50}};
  EXPECT_TRUE(choose_offload(seqs, 0.30, 1000, 16, lim).empty());  // room enough on the decode device
  EXPECT_EQ(choose_offload(seqs, 0.10, 1000, 16, lim), (std::vector<uint64_t>{2}));
  lim.max_moves = 8;
  EXPECT_EQ(choose_offload(seqs, 0.10, 1000, 16, lim), (std::vector<uint64_t>{2, 1, 4}));  // never 3: too short
  // 1,201 tokens of worst case for 2 need 76 blocks: with 60 free it is skipped, 1 (801: 51) fits.
  EXPECT_EQ(choose_offload(seqs, 0.10, 60, 16, lim), (std::vector<uint64_t>{1}));
  EXPECT_TRUE(choose_offload(seqs, 0.10, 0, 16, lim).empty());
  lim.min_generated = 599;
  EXPECT_EQ(choose_offload(seqs, 0.0, 1000, 16, lim), (std::vector<uint64_t>{2, 1}));
}

TEST(offload_policy_test, long_tails_move_for_time_until_the_predicted_step_fits) {
  offload_limits lim;
  lim.max_moves = 8;
  lim.max_step_s = 0.050;  // 50 ms per step
  // a = 10 us per context token, 2 ms per row: the batch below predicts 2 + 4 ms rows + contexts.
  const std::vector<offload_candidate> seqs = {
      {1, 600, 2000, 100}, {2, 900, 3000, 200}, {3, 100, 200, 900}, {4, 513, 1000, 50}};
  offload_step step{0.080, 10e-6, 2e-3};
  // Plenty of KV free (no memory pressure): 2 goes first (-32 ms: 48 ms left), which fits.
  EXPECT_EQ(choose_offload(seqs, 0.9, 1000, 16, lim, step), (std::vector<uint64_t>{2}));
  // A tighter target: 2 then 1 (-22 ms: 26 ms), then it fits; 3 is never a candidate (too short).
  lim.max_step_s = 0.030;
  EXPECT_EQ(choose_offload(seqs, 0.9, 1000, 16, lim, step), (std::vector<uint64_t>{2, 1}));
  lim.max_step_s = 0.001;
  EXPECT_EQ(choose_offload(seqs, 0.9, 1000, 16, lim, step), (std::vector<uint64_t>{2, 1, 4}));
  // Within the target, or no prediction yet, or the key off: nothing moves for time.
  lim.max_step_s = 0.100;
  EXPECT_TRUE(choose_offload(seqs, 0.9, 1000, 16, lim, step).empty());
  EXPECT_TRUE(choose_offload(seqs, 0.9, 1000, 16, lim, offload_step{}).empty());
  lim.max_step_s = 0;
  EXPECT_TRUE(choose_offload(seqs, 0.9, 1000, 16, lim, step).empty());
  // Memory pressure still moves up to max_moves whatever the time.
  lim.max_step_s = 0.100;
  EXPECT_EQ(choose_offload(seqs, 0.1, 1000, 16, lim, step), (std::vector<uint64_t>{2, 1, 4}));
}

}  // namespace
}  // namespace fw
