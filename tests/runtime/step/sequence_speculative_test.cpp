// sequence::advance_speculative with fabricated target logits: an end-of-sequence token or a stop
// string inside a run the target accepts ends the sequence right there, and nothing after it is
// emitted or kept.
#include <gtest/gtest.h>

#include "runtime/step/sequence.hpp"
#include "tests/support/sampling_presets.hpp"
#include "tests/support/test_models.hpp"

namespace fw {
namespace {

class sequence_speculative_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tiny_model_spec spec;
    spec.seed = 41;
    model_ = test::load_tiny(spec, "sequence_spec");
  }
  static void TearDownTestSuite() { model_.reset(); }

  /// Rows of logits whose argmax is each of `tokens`.
  static std::vector<float> rows_choosing(const std::vector<int32_t>& tokens) {
    const size_t nv = model_->config().n_vocab;
    std::vector<float> rows(tokens.size() * nv, 0.0f);
    for (size_t i = 0; i < tokens.size(); ++i) rows[i * nv + static_cast<size_t>(tokens[i])] = 10.0f;
    return rows;
  }
  /// Two ordinary tokens whose pieces are plain text.
  static std::pair<int32_t, int32_t> two_words() {
    const auto& v = model_->vocab();
    for (int32_t a = 10; a < v.n_vocab(); ++a)
      for (int32_t b = a + 1; b < v.n_vocab(); ++b) {
        const std::string pa = v.token_to_piece(a), pb = v.token_to_piece(b);
        if (v.is_eog(a) || v.is_eog(b) || pa.empty() || pb.empty()) continue;
        if (pa.find(pb) == std::string::npos && pb.find(pa) == std::string::npos) return {a, b};
      }
    return {-1, -1};
  }

  static inline std::shared_ptr<const model> model_;
};

TEST_F(sequence_speculative_test, an_end_of_sequence_token_inside_an_accepted_run_ends_it_there) {
  const auto [a, b] = two_words();
  const int32_t eos = tiny_model_eot_id;
  ASSERT_TRUE(model_->vocab().is_eog(eos));
  sampling_params params = test::greedy(20);
  params.ignore_eos = false;  // the end of sequence ends it
  sequence s(1, {a, b}, params, static_cast<int32_t>(model_->config().n_vocab), 20);
  draft_proposal p;
  p.tokens = {a, eos, b};  // the target agrees on all three, then would add b
  int accepted = -1;
  auto outs = s.advance_speculative(rows_choosing({a, eos, b, b}), p, model_->vocab(), &accepted);
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].token, a);
  EXPECT_TRUE(outs[1].finished);
  EXPECT_EQ(outs[1].finish_reason, "stop");
  EXPECT_EQ(outs[1].token, -1) << "the end-of-sequence token itself is not emitted";
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(s.generated(), std::vector<int32_t>{a}) << "nothing after it is kept";
  EXPECT_EQ(accepted, 2) << "the draft was right about the end too; the b after it is never looked at";
}

TEST_F(sequence_speculative_test, a_stop_string_inside_an_accepted_run_ends_it_and_is_not_returned) {
  const auto [a, b] = two_words();
  sampling_params params = test::greedy(20);
  params.stop = {model_->vocab().token_to_piece(b)};
  sequence s(1, {a}, params, static_cast<int32_t>(model_->config().n_vocab), 20);
  draft_proposal p;
  p.tokens = {a, b, a};
  int accepted = -1;
  auto outs = s.advance_speculative(rows_choosing({a, b, a, a}), p, model_->vocab(), &accepted);
  std::string text;
  for (const auto& o : outs) text += o.text;
  ASSERT_FALSE(outs.empty());
  EXPECT_TRUE(outs.back().finished);
  EXPECT_EQ(outs.back().finish_reason, "stop");
  EXPECT_EQ(outs.size(), 2u) << "the token after the stop string is not taken";
  EXPECT_EQ(text.find(params.stop[0]), std::string::npos) << "the stop string is held back: " << text;
  EXPECT_TRUE(s.finished());
}

}  // namespace
}  // namespace fw
