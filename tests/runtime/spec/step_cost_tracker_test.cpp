// step_cost_tracker with fabricated step times: the measured ratios replace the calibrated ones
// once two row counts are measured, anchored on the most observed one; outliers are clipped.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/spec/k_policy.hpp"
#include "runtime/spec/step_cost_tracker.hpp"

namespace fw {
namespace {

const std::vector<double> calibrated = {1.0, 1.05, 1.2, 1.3};

TEST(step_cost_tracker, keeps_the_calibration_until_two_row_counts_are_measured) {
  step_cost_tracker t(4, 0.1, 8);
  EXPECT_EQ(t.costs(calibrated), calibrated);
  for (int i = 0; i < 20; ++i) t.observe(1, 1e-3);
  for (int i = 0; i < 7; ++i) t.observe(2, 2e-3);  // one short of min_samples
  EXPECT_EQ(t.costs(calibrated), calibrated);
  EXPECT_EQ(t.samples(1), 20);
  EXPECT_EQ(t.samples(2), 7);
  t.observe(0, 1e-3), t.observe(5, 1e-3), t.observe(1, 0.0), t.observe(1, -1.0);  // ignored
  EXPECT_EQ(t.samples(1), 20);
  EXPECT_EQ(t.samples(5), 0);
}

TEST(step_cost_tracker, measured_rows_are_priced_by_their_times_against_one_row) {
  step_cost_tracker t(4, 0.1, 8);
  for (int i = 0; i < 30; ++i) t.observe(1, 1e-3), t.observe(2, 1.25e-3);
  for (int i = 0; i < 10; ++i) t.observe(3, 1.2e-3);  // measured cheaper than 2 rows: noise
  const auto c = t.costs(calibrated);
  ASSERT_EQ(c.size(), calibrated.size());
  EXPECT_DOUBLE_EQ(c[0], 1.0);
  EXPECT_NEAR(c[1], 1.25, 1e-9);
  EXPECT_NEAR(c[2], 1.25, 1e-9);  // raised to the 2-row cost: more rows never cost less
  EXPECT_NEAR(c[3], 1.3, 1e-9);   // unmeasured: the calibration's (3 rows measured as calibrated)
}

TEST(step_cost_tracker, without_one_row_steps_the_batch_size_anchors_on_the_calibration) {
  // A batch of 3 sequences: steps of 3 rows (plain) and 4 (one drafted token); no 1-row steps.
  step_cost_tracker t(4, 0.1, 8);
  for (int i = 0; i < 40; ++i) t.observe(3, 2e-3);
  for (int i = 0; i < 10; ++i) t.observe(4, 2.5e-3);
  const auto c = t.costs(calibrated);
  EXPECT_DOUBLE_EQ(c[0], 1.0);
  EXPECT_DOUBLE_EQ(c[1], 1.05);
  EXPECT_NEAR(c[2], 1.2, 1e-9);         // the anchor keeps its calibrated cost
  EXPECT_NEAR(c[3], 1.2 * 1.25, 1e-9);  // and the measured ratio prices the next row
}

TEST(step_cost_tracker, a_preempted_step_moves_the_average_little) {
  step_cost_tracker t(4, 0.1, 8);
  for (int i = 0; i < 30; ++i) t.observe(1, 1e-3), t.observe(2, 1.1e-3);
  t.observe(2, 1.0);  // 900x: the OS ran something else
  const auto c = t.costs(calibrated);
  EXPECT_LT(c[1], 1.1 * 1.11);  // clipped to 2x the average before weighing in with 0.1
  EXPECT_GT(c[1], 1.1);
}

TEST(step_cost_tracker, dearer_measured_rows_make_the_cost_aware_policy_draft_less) {
  k_policy_config kc;
  kc.verify_cost = calibrated;
  k_policy p(kc);
  // At 40% acceptance the calibration says one drafted token pays: (1 + 0.4) / 1.05 > 1.
  EXPECT_EQ(p.best_k(0.4, 3), 1);
  step_cost_tracker t(4, 0.1, 8);
  for (int i = 0; i < 30; ++i) t.observe(1, 1e-3), t.observe(2, 1.45e-3);
  const auto c = t.costs(calibrated);
  EXPECT_NEAR(c[2], 1.2 * 1.45 / 1.05, 1e-9);  // 3 and 4 rows, unmeasured, dearer in proportion
  EXPECT_NEAR(c[3], 1.3 * 1.45 / 1.05, 1e-9);
  p.set_verify_cost(c);
  EXPECT_EQ(p.best_k(0.4, 3), 0);  // measured 1.45x: plain decoding pays more
}

}  // namespace
}  // namespace fw
