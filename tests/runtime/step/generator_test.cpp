// Single-sequence generation on a tiny model: greedy equals a hand-written argmax loop, limits
// and errors, seeds, stop strings, cancellation, and no KV leak on any exit path.
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/step/generator.hpp"
#include "tests/support/test_models.hpp"
#include "tests/support/sampling_presets.hpp"

namespace fw {
namespace {

using ::fw::test::greedy;

class generator_test : public ::testing::Test {
 protected:
  void SetUp() override {
    tiny_model_spec spec;
    spec.weight_type = ggml_type::q8_0;
    spec.seed = 5;
    m_ = test::load_tiny(spec, "generator_q8_0");
    ASSERT_TRUE(m_);
    cpu_backend_options o;
    o.threads = 2;
    o.kv_tokens = 256;
    be_ = std::make_unique<cpu_backend>(m_->config(), m_->weights(), o);
  }
  generation_result run(const std::vector<int32_t>& prompt, const sampling_params& p,
                        const text_callback& cb = {}) {
    generator g(*m_, *be_, generator_options{256, 7, false});  // small prefill chunks on purpose
    auto r = g.run(prompt, p, cb);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.err().what());
    EXPECT_EQ(be_->kv_pool().used_blocks(), 0u) << "the sequence's KV blocks leaked";
    return r ? *r : generation_result{};
  }
  std::vector<int32_t> prompt() const { return m_->vocab().encode("Hello there, tiny model.", false, true); }
  std::shared_ptr<const model> m_;
  std::unique_ptr<cpu_backend> be_;
};

TEST_F(generator_test, greedy_equals_a_hand_written_argmax_loop) {
  const auto p = prompt();
  ASSERT_GT(p.size(), 3u);
  const auto res = run(p, greedy(24));
  ASSERT_EQ(res.tokens.size(), 24u);
  EXPECT_EQ(res.finish_reason, "length");

  auto& pool = be_->kv_pool();
  kv_handle h = *pool.allocate(0);
  forward_batch b;
  std::vector<float> logits;
  b.add_sequence(&h, p.data(), p.size(), 0, false);
  ASSERT_TRUE(be_->forward(b, logits));
  std::vector<int32_t> expect;
  for (int i = 0; i < 24; ++i) {
    const int32_t t = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    expect.push_back(t);
    b.clear();
    b.add_sequence(&h, &t, 1, static_cast<int32_t>(p.size() + i), false);
    ASSERT_TRUE(be_->forward(b, logits));
  }
  ASSERT_TRUE(pool.release(h));
  EXPECT_EQ(res.tokens, expect);
  EXPECT_EQ(res.prompt_tokens, p);
}

TEST_F(generator_test, context_overflow_is_a_clear_error) {
  generator g(*m_, *be_, generator_options{256, 512, false});
  std::vector<int32_t> long_prompt(200, 40);
  auto r = g.run(long_prompt, greedy(100));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().code, errc::context_overflow);
  EXPECT_NE(r.err().message.find("context window of 256"), std::string::npos) << r.err().message;
  std::vector<int32_t> too_long(300, 40);
  auto r2 = g.run(too_long, greedy(1));
  ASSERT_FALSE(r2);
  EXPECT_EQ(r2.err().code, errc::context_overflow);
  auto r3 = g.run({}, greedy(1));
  ASSERT_FALSE(r3);
  EXPECT_EQ(r3.err().code, errc::invalid_argument);
  EXPECT_EQ(be_->kv_pool().used_blocks(), 0u);
}

TEST_F(generator_test, invalid_sampling_parameters_are_rejected) {
  generator g(*m_, *be_, generator_options{256, 512, false});
  sampling_params p;
  p.top_p = 1.5f;
  auto r = g.run(prompt(), p);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().code, errc::invalid_argument);
}

TEST_F(generator_test, same_seed_same_tokens_and_different_seed_differs) {
  sampling_params p = test::unfiltered(1.5f, 32);
  p.seed = 1234;
  const auto a = run(prompt(), p);
  const auto b = run(prompt(), p);
  p.seed = 99;
  const auto c = run(prompt(), p);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_NE(a.tokens, c.tokens);
}

TEST_F(generator_test, stop_string_cuts_the_text_before_it) {
  const auto full = run(prompt(), greedy(40));
  // Pick a printable-ASCII piece generated after the start as the stop string.
  std::string stop;
  for (size_t i = 3; i < full.tokens.size() && stop.empty(); ++i) {
    const std::string piece = m_->vocab().token_to_piece(full.tokens[i]);
    if (!piece.empty() && std::all_of(piece.begin(), piece.end(), [](char c) { return c > 32 && c < 127; }))
      stop = piece;
  }
  if (stop.empty()) GTEST_SKIP() << "no printable piece in this tiny model's output";
  auto p = greedy(40);
  p.stop = {stop};
  const auto cut = run(prompt(), p);
  EXPECT_EQ(cut.finish_reason, "stop");
  EXPECT_EQ(cut.text, full.text.substr(0, full.text.find(stop)));
  EXPECT_LT(cut.tokens.size(), full.tokens.size());
}

TEST_F(generator_test, a_stop_token_id_ends_the_answer_before_it) {
  const auto full = run(prompt(), greedy(40));
  ASSERT_GT(full.tokens.size(), 6u);
  // The first token not seen earlier in the answer from the fourth on: the answer stops there.
  size_t at = 3;
  while (at < full.tokens.size() &&
         std::find(full.tokens.begin(), full.tokens.begin() + at, full.tokens[at]) != full.tokens.begin() + at)
    ++at;
  if (at == full.tokens.size()) GTEST_SKIP() << "every token repeats an earlier one in this tiny model's output";
  auto p = greedy(40);
  p.stop_token_ids = {full.tokens[at]};
  const auto cut = run(prompt(), p);
  EXPECT_EQ(cut.finish_reason, "stop");
  EXPECT_EQ(cut.tokens, std::vector<int32_t>(full.tokens.begin(), full.tokens.begin() + at));
  // A logit bias of -100 on that token: the answer takes another turn there.
  p.stop_token_ids.clear();
  p.logit_bias_ids = {full.tokens[at]};
  p.logit_bias = {-100.0f};
  const auto turned = run(prompt(), p);
  ASSERT_GT(turned.tokens.size(), at);
  EXPECT_EQ(std::vector<int32_t>(turned.tokens.begin(), turned.tokens.begin() + at),
            std::vector<int32_t>(full.tokens.begin(), full.tokens.begin() + at));
  EXPECT_NE(turned.tokens[at], full.tokens[at]);
}

TEST_F(generator_test, callback_returning_false_cancels) {
  int calls = 0;
  const auto r = run(prompt(), greedy(40), [&](std::string_view) { return ++calls < 3; });
  EXPECT_EQ(r.finish_reason, "cancelled");
  EXPECT_EQ(calls, 3);
  EXPECT_LT(r.tokens.size(), 40u);
}

TEST_F(generator_test, streamed_pieces_concatenate_to_the_text) {
  std::string streamed;
  const auto r = run(prompt(), greedy(30), [&](std::string_view s) {
    streamed.append(s);
    return true;
  });
  EXPECT_EQ(streamed, r.text);
  EXPECT_GT(r.prefill_ms, 0.0);
}

}  // namespace
}  // namespace fw
