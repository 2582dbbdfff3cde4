// logprobs_of: log-softmax of raw logits at the chosen token, and the top alternatives in order.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/sample/token_logprobs.hpp"

namespace fw {
namespace {

TEST(token_logprobs, log_softmax_and_top_alternatives) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, -50.0f};
  double z = 0;
  for (float v : logits) z += std::exp(v);
  const auto lp = logprobs_of(logits, 2, 3);
  EXPECT_NEAR(lp.logprob, 2.0 - std::log(z), 1e-5);
  ASSERT_EQ(lp.top_ids, (std::vector<int32_t>{1, 3, 2}));  // ties: lower id first
  EXPECT_NEAR(lp.top_logprobs[0], 3.0 - std::log(z), 1e-5);
  EXPECT_EQ(lp.top_logprobs[0], lp.top_logprobs[1]);
  double total = 0;
  for (size_t i = 0; i < logits.size(); ++i) total += std::exp(logprobs_of(logits, static_cast<int32_t>(i), 0).logprob);
  EXPECT_NEAR(total, 1.0, 1e-5);
  EXPECT_TRUE(logprobs_of(logits, 0, 0).top_ids.empty());
  EXPECT_EQ(logprobs_of(logits, 0, 99).top_ids.size(), logits.size());  // capped at the vocabulary
  // Rank: the token's place in that order (1 = most likely), with or without alternatives asked.
  EXPECT_EQ(lp.token, 2);
  EXPECT_EQ(lp.rank, 3);
  EXPECT_EQ(logprobs_of(logits, 1, 0).rank, 1);
  EXPECT_EQ(logprobs_of(logits, 3, 0).rank, 2);  // tied with id 1, after it
  EXPECT_EQ(logprobs_of(logits, 4, 0).rank, 5);
}

TEST(token_logprobs, large_logits_do_not_overflow) {
  const std::vector<float> logits = {1000.0f, 999.0f};
  const auto lp = logprobs_of(logits, 1, 1);
  EXPECT_NEAR(lp.logprob, -1.0 - std::log1p(std::exp(-1.0)), 1e-5);
  EXPECT_TRUE(std::isfinite(lp.top_logprobs[0]));
}

}  // namespace
}  // namespace fw
