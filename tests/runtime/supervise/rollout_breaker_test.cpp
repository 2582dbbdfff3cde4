// rollout_breaker with fabricated outcome streams: the traffic split follows the stage's share;
// healthy stages advance; P99 +20% against the previous stage, errors > 0.5% or draft failures
// > 15% send it back one stage, and it waits out the cool-down before the next try.
#include <gtest/gtest.h>

#include "runtime/supervise/rollout_breaker.hpp"

namespace fw {
namespace {

rollout_outcome ok(double ms) { return {ms / 1000.0, false, 0, 0}; }

rollout_limits quick() {
  rollout_limits l;
  l.min_requests = 20;
  l.advance_after = 30;
  l.cooldown_s = 100;
  return l;
}

TEST(rollout_breaker_test, requests_split_by_the_stage_share) {
  rollout_limits l;
  l.start_stage = 2;
  rollout_breaker b(l);
  int on_new = 0;
  for (uint64_t id = 1; id <= 20000; ++id) {
    const uint32_t s = b.assign(id);
    ASSERT_TRUE(s == 1 || s == 2);
    on_new += s == 2;
    EXPECT_EQ(b.assign(id), s) << "stable per request";
  }
  EXPECT_NEAR(on_new / 20000.0, 0.30, 0.02);
  EXPECT_EQ(rollout_breaker(rollout_limits{}).assign(7), 1u);  // stage 1: everyone
}

TEST(rollout_breaker_test, healthy_stages_advance_one_at_a_time) {
  rollout_breaker b(quick());
  double t = 0;
  // Judged from the 20th outcome on; the 30th healthy judgement (the 49th outcome) advances.
  for (int i = 0; i < 48; ++i) EXPECT_FALSE(b.record(1, ok(10), t += 1));
  EXPECT_TRUE(b.record(1, ok(10), t += 1));
  EXPECT_EQ(b.stage(), 2u);
  EXPECT_EQ(b.decisions().back().reason, "stage 1 healthy for 30 requests");
  // Stage 2 within 20% of stage 1 (11 vs 10 ms/token): it advances too.
  for (int i = 0; i < 60 && b.stage() == 2; ++i) {
    b.record(1, ok(10), t += 1);
    b.record(2, ok(11), t += 1);
  }
  EXPECT_EQ(b.stage(), 3u);
}

TEST(rollout_breaker_test, a_slower_stage_trips_back_and_waits_out_the_cool_down) {
  rollout_limits l = quick();
  l.start_stage = 2;
  rollout_breaker b(l);
  double t = 0;
  for (int i = 0; i < 20; ++i) b.record(1, ok(10), t += 1);
  bool tripped = false;
  for (int i = 0; i < 20 && !tripped; ++i) tripped = b.record(2, ok(12.5), t += 1);  // +25%
  ASSERT_TRUE(tripped);
  EXPECT_EQ(b.stage(), 1u);
  EXPECT_NE(b.decisions().back().reason.find("breaker: stage 2 P99 12.50 ms/token > 120.0% of stage 1's 10.00 ms"),
            std::string::npos)
      << b.decisions().back().reason;
  // Healthy again, but no new try inside the cool-down (100 s).
  const double tripped_at = t;
  while (t < tripped_at + 99) EXPECT_FALSE(b.record(1, ok(10), t += 1));
  EXPECT_EQ(b.stage(), 1u);
  b.record(1, ok(10), t += 2);
  EXPECT_EQ(b.stage(), 2u) << "after the cool-down it tries again";
}

TEST(rollout_breaker_test, errors_or_draft_failures_trip_the_breaker) {
  rollout_limits l = quick();
  l.start_stage = 3;
  rollout_breaker errors(l);
  for (int i = 0; i < 19; ++i) errors.record(3, ok(10), i);
  EXPECT_TRUE(errors.record(3, {0.01, true, 0, 0}, 20));  // 1 of 20 = 5% > 0.5%
  EXPECT_EQ(errors.stage(), 2u);
  EXPECT_NE(errors.decisions().back().reason.find("errors 5.0% > 0.5%"), std::string::npos);

  rollout_breaker drafts(l);
  bool tripped = false;
  for (int i = 0; i < 20 && !tripped; ++i) tripped = drafts.record(3, {0.01, false, 10, 2}, i);  // 2 of 10 proposals failed
  EXPECT_TRUE(tripped);
  EXPECT_NE(drafts.decisions().back().reason.find("draft failures 20.0% > 15.0%"), std::string::npos);
  EXPECT_NEAR(drafts.stats(3).draft_failure, 0.20, 1e-9);
  EXPECT_EQ(drafts.stats(2).requests, 0u) << "the stage entered is judged afresh";
}

TEST(rollout_breaker_test, stage_one_cannot_fall_back_and_only_pauses) {
  rollout_breaker b(quick());
  for (int i = 0; i < 19; ++i) b.record(1, ok(10), i);
  EXPECT_FALSE(b.record(1, {0.01, true, 0, 0}, 20));
  EXPECT_EQ(b.stage(), 1u);
  EXPECT_TRUE(b.decisions().empty());
}

}  // namespace
}  // namespace fw
