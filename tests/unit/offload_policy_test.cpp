// offload_policy with fabricated sequences: nothing moves while the decode pool has room or
// before a sequence is long enough; the longest generation goes first; a candidate whose worst
// case does not fit the offload pool is skipped; at most max_moves per decision.
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

}  // namespace
}  // namespace fw
