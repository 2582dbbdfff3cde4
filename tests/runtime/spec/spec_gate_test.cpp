// spec_gate decisions, driven with synthetic step timings.
#include <gtest/gtest.h>

#include "runtime/spec/spec_gate.hpp"

namespace fw {
namespace {

constexpr spec_gate_config cfg{.window = 4, .recheck_every = 20, .off_steps = 10, .tolerance = 0.05};

// One step in whatever mode the gate allows: speculative steps give spec_tokens tokens in
// spec_ms, plain steps 1 token in plain_ms.
void step(spec_gate& g, uint64_t spec_tokens, double spec_ms, double plain_ms, double draft_share = 0.5) {
  if (g.allow_drafts())
    g.observe(true, spec_tokens, spec_ms, spec_ms * draft_share);
  else
    g.observe(false, 1, plain_ms);
}

TEST(spec_gate_test, keeps_speculating_when_it_pays_and_rechecks_plain_now_and_then) {
  spec_gate g(cfg);
  EXPECT_TRUE(g.allow_drafts());
  for (int i = 0; i < 4; ++i) step(g, 3, 10, 5);  // 0.3 tokens/ms vs plain 0.2
  EXPECT_EQ(g.current(), spec_gate::phase::probe_plain);  // first: measure plain
  for (int i = 0; i < 4; ++i) step(g, 3, 10, 5);
  EXPECT_EQ(g.current(), spec_gate::phase::speculate);
  EXPECT_NEAR(g.spec_tokens_per_ms(), 0.3, 1e-9);
  EXPECT_NEAR(g.plain_tokens_per_ms(), 0.2, 1e-9);
  int plain_steps = 0;
  for (int i = 0; i < 100; ++i) {
    plain_steps += g.allow_drafts() ? 0 : 1;
    step(g, 3, 10, 5);
  }
  EXPECT_EQ(g.times_turned_off(), 0u);
  EXPECT_GT(plain_steps, 0);   // re-measured plain decoding
  EXPECT_LT(plain_steps, 25);  // but mostly speculated
}

TEST(spec_gate_test, turns_drafting_off_when_plain_is_faster_and_retries_later) {
  spec_gate g(cfg);
  for (int i = 0; i < 8; ++i) step(g, 3, 20, 5);  // 0.15 tokens/ms vs plain 0.2
  EXPECT_EQ(g.current(), spec_gate::phase::off);
  EXPECT_FALSE(g.allow_drafts());
  EXPECT_EQ(g.times_turned_off(), 1u);
  for (int i = 0; i < 10; ++i) step(g, 3, 20, 5);
  EXPECT_TRUE(g.allow_drafts());  // tries again after off_steps
  for (int i = 0; i < 4; ++i) step(g, 3, 20, 5);
  EXPECT_FALSE(g.allow_drafts());  // still slower: off again after one window
  EXPECT_EQ(g.times_turned_off(), 2u);
  // The second loss doubles the off period.
  for (int i = 0; i < 10; ++i) step(g, 3, 20, 5);
  EXPECT_FALSE(g.allow_drafts());
  // Text became predictable: the retry measures faster speculation and keeps it.
  for (int i = 0; i < 10; ++i) step(g, 3, 20, 5);
  for (int i = 0; i < 4; ++i) step(g, 4, 10, 5);
  EXPECT_TRUE(g.allow_drafts());
  for (int i = 0; i < 10; ++i) step(g, 4, 10, 5);
  EXPECT_EQ(g.times_turned_off(), 2u);
}

// The first speculative window, and each retry after an off period, is a trial: the decoder
// drafts one token per step then, so judging a draft that does not pay costs little.
TEST(spec_gate_test, marks_unmeasured_speculative_windows_as_trials) {
  spec_gate g(cfg);
  EXPECT_TRUE(g.trial());
  for (int i = 0; i < 4; ++i) step(g, 3, 20, 5);
  EXPECT_FALSE(g.trial());  // measured: probing plain now
  for (int i = 0; i < 4; ++i) step(g, 3, 20, 5);
  ASSERT_EQ(g.current(), spec_gate::phase::off);
  EXPECT_FALSE(g.trial());
  for (int i = 0; i < 10; ++i) step(g, 3, 20, 5);
  ASSERT_TRUE(g.allow_drafts());
  EXPECT_TRUE(g.trial());  // the retry is judged on its own window
  for (int i = 0; i < 4; ++i) step(g, 4, 10, 5);
  EXPECT_FALSE(g.trial());
}

TEST(spec_gate_test, tolerates_speculation_slightly_slower_than_plain) {
  spec_gate g(cfg);
  for (int i = 0; i < 8; ++i) step(g, 39, 200, 5);  // 0.195 vs 0.2 tokens/ms: within 5%
  EXPECT_EQ(g.current(), spec_gate::phase::speculate);
  EXPECT_EQ(g.times_turned_off(), 0u);
}

TEST(spec_gate_test, never_gates_a_draft_that_costs_next_to_nothing) {
  spec_gate g(cfg);
  // An n-gram draft: 1% of the step; speculation measured slower (extra verify rows, few hits).
  for (int i = 0; i < 60; ++i) step(g, 3, 20, 5, 0.01);
  EXPECT_TRUE(g.allow_drafts());
  EXPECT_EQ(g.times_turned_off(), 0u);
}

TEST(spec_gate_test, steps_where_nobody_drafted_count_as_plain) {
  spec_gate g(cfg);
  // Every sequence at k = 0 (the acceptance policy backed off): plain measurements accumulate and
  // nothing is judged until a speculative window exists.
  for (int i = 0; i < 12; ++i) g.observe(false, 1, 5);
  EXPECT_TRUE(g.allow_drafts());
  EXPECT_NEAR(g.plain_tokens_per_ms(), 0.2, 1e-9);
  EXPECT_LT(g.spec_tokens_per_ms(), 0);
}

}  // namespace
}  // namespace fw
