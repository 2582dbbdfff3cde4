// restart_policy with fabricated crash times: the wait doubles with each crash in the window up
// to its cap, crashes that left the window no longer count, and one crash too many marks the
// device down for down_s and starts a fresh window.
#include <gtest/gtest.h>

#include "runtime/supervise/restart_policy.hpp"

namespace fw {
namespace {

TEST(restart_policy_test, backoff_doubles_up_to_its_cap) {
  restart_policy p({0.01, 0.05, 100, 60, 30});
  EXPECT_DOUBLE_EQ(p.crashed(0).delay_s, 0.01);
  EXPECT_DOUBLE_EQ(p.crashed(1).delay_s, 0.02);
  EXPECT_DOUBLE_EQ(p.crashed(2).delay_s, 0.04);
  const auto d = p.crashed(3);
  EXPECT_DOUBLE_EQ(d.delay_s, 0.05);
  EXPECT_EQ(d.recent, 4u);
  EXPECT_FALSE(d.escalate);
}

TEST(restart_policy_test, old_crashes_leave_the_window) {
  restart_policy p({0.01, 10, 100, 60, 30});
  p.crashed(0);
  p.crashed(10);
  EXPECT_EQ(p.crashed(20).recent, 3u);
  const auto d = p.crashed(75);  // 0 and 10 are more than 60 s old
  EXPECT_EQ(d.recent, 2u);
  EXPECT_DOUBLE_EQ(d.delay_s, 0.02);
  EXPECT_EQ(p.crashes(), 4u);
}

TEST(restart_policy_test, too_many_crashes_mark_the_device_down) {
  restart_policy p({0.01, 2, 3, 60, 30});
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(p.crashed(i).escalate);
  const auto d = p.crashed(3);
  EXPECT_TRUE(d.escalate);
  EXPECT_DOUBLE_EQ(d.delay_s, 30);
  EXPECT_EQ(p.escalations(), 1u);
  // Back from down: a fresh window, the shortest wait again.
  const auto again = p.crashed(40);
  EXPECT_FALSE(again.escalate);
  EXPECT_EQ(again.recent, 1u);
  EXPECT_DOUBLE_EQ(again.delay_s, 0.01);
}

}  // namespace
}  // namespace fw
