// The feature draft on a tiny model: fit_feature_map fits a map that the file keeps exactly,
// greedy output with the feature and hybrid drafts equals plain decoding, the map predicts what
// the target does on the text it was fit on, and bad maps are refused with clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "runtime/spec/drafts/feature_drafter.hpp"
#include "runtime/spec/drafts/feature_fit.hpp"
#include "runtime/step/generator.hpp"
#include "runtime/gguf/gguf_writer.hpp"
#include "runtime/spec/drafts/hybrid_drafter.hpp"
#include "runtime/spec/drafts/ngram_drafter.hpp"
#include "runtime/spec/drafts/draft_pipeline.hpp"
#include "runtime/device/prefill.hpp"
#include "runtime/step/batch_decoder.hpp"
#include "tests/support/chi_square.hpp"
#include "tests/support/sampling_presets.hpp"
#include "tests/support/pipeline_step.hpp"
#include "tests/support/test_models.hpp"

namespace fw {
namespace {

using ::fw::test::greedy;

class feature_drafter_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tiny_model_spec spec;
    spec.weight_type = ggml_type::q8_0;
    spec.seed = 11;
    spec.n_layer = 3;
    target_ = test::load_tiny(spec, "feature_target");
    auto be = backend();
    feature_fit_options o;
    o.max_tokens = 48;
    auto map = fit_feature_map(*target_, *be, *be->thread_pool(), prompts(), o);
    ASSERT_TRUE(map) << map.err().what();
    map_ = std::move(*map);
  }
  static void TearDownTestSuite() { target_.reset(); }

  static std::unique_ptr<cpu_backend> backend() {
    cpu_backend_options o;
    o.threads = 2;
    o.kv_tokens = 2048;
    return std::make_unique<cpu_backend>(target_->config(), target_->weights(), o);
  }
  static std::vector<std::vector<int32_t>> prompts() {
    std::vector<std::vector<int32_t>> ps;
    for (int i = 0; i < 12; ++i) {
      std::vector<int32_t> p;
      for (int j = 0; j < 6 + i; ++j) p.push_back(3 + (j * (i + 7) + 2 * i) % 50);
      ps.push_back(p);
    }
    return ps;
  }
  /// Runs every prompt plainly and speculatively (fixed k, or auto with a cost table); returns the
  /// accepted draft tokens.
  static uint64_t expect_greedy_identical(drafter& d, bool adaptive) {
    auto be = backend();
    k_policy_config kc;
    kc.adaptive = adaptive;
    kc.fixed_k = 3;
    if (adaptive) kc.verify_cost = {1.0, 1.07, 1.19, 1.34, 1.46, 1.63, 1.87, 2.13, 2.49};
    kc.learn_step_costs = false;  // k choices independent of the machine's load
    generator plain(*target_, *be, generator_options{512, 512, false});
    generator spec(*target_, *be, generator_options{512, 512, false, &d, k_policy(kc)});
    uint64_t drafted = 0, accepted = 0;
    for (const auto& p : prompts()) {
      auto a = plain.run(p, greedy(48));
      auto b = spec.run(p, greedy(48));
      EXPECT_TRUE(a && b);
      if (!a || !b) return 0;
      EXPECT_EQ(a->tokens, b->tokens) << "draft " << d.name();
      drafted += b->spec.draft_tokens;
      accepted += b->spec.accepted_tokens;
    }
    EXPECT_GT(drafted, 0u) << "draft " << d.name() << " never proposed anything";
    EXPECT_EQ(be->kv_pool().used_blocks(), 0u) << "target KV leaked";
    return accepted;
  }

  static inline std::shared_ptr<const model> target_;
  static inline feature_map map_;
};

TEST_F(feature_drafter_test, fit_produces_a_map_the_file_keeps_exactly) {
  const auto& cfg = target_->config();
  EXPECT_EQ(map_.n_embd, cfg.n_embd);
  EXPECT_EQ(map_.n_vocab, cfg.n_vocab);
  EXPECT_GE(map_.samples, 3 * cfg.n_embd);
  EXPECT_EQ(map_.weights.size(), 3u * cfg.n_embd * cfg.n_embd);
  ASSERT_FALSE(map_.vocab.empty());
  const std::string path = test::temp_dir() + "/feature_map.gguf";
  ASSERT_TRUE(save_feature_map(map_, path));
  auto back = load_feature_map(path);
  ASSERT_TRUE(back) << back.err().what();
  EXPECT_EQ(back->n_embd, map_.n_embd);
  EXPECT_EQ(back->n_vocab, map_.n_vocab);
  EXPECT_EQ(back->samples, map_.samples);
  EXPECT_EQ(back->vocab, map_.vocab);
  EXPECT_EQ(back->weights, map_.weights);
}

TEST_F(feature_drafter_test, feature_draft_is_lossless_and_predicts_the_text_it_was_fit_on) {
  auto d = feature_drafter::create(map_, target_, backend()->thread_pool());
  ASSERT_TRUE(d) << d.err().what();
  EXPECT_TRUE((*d)->wants_hidden());
  const uint64_t fitted = expect_greedy_identical(**d, false);
  expect_greedy_identical(**d, true);
  // Fit on these very continuations, the map does far better than one that ignores its input
  // (always proposing the most frequent token): measured 338 vs 28 accepted.
  feature_map blind = map_;
  std::fill(blind.weights.begin(), blind.weights.end(), 0.0f);
  auto o = feature_drafter::create(blind, target_, backend()->thread_pool());
  ASSERT_TRUE(o) << o.err().what();
  EXPECT_GT(fitted, 3 * expect_greedy_identical(**o, false));
}

TEST_F(feature_drafter_test, hybrid_draft_is_lossless) {
  auto f = feature_drafter::create(map_, target_, backend()->thread_pool());
  ASSERT_TRUE(f) << f.err().what();
  hybrid_drafter h(std::make_unique<ngram_drafter>(1), std::move(*f));
  expect_greedy_identical(h, false);
  expect_greedy_identical(h, true);
}

// A sampled sequence's proposal is a draw from the q it carries (n_vocab floats: the draft's
// softmax at the target's temperature over its candidates, 0 elsewhere), made from the sequence's
// seed and the position: the same history gives the same proposal, and over many seeds the
// first token follows q (chi-square). Greedy sequences carry no q. Through the generator a
// sampled run accepts some drafts and rejects others and leaves no KV behind.
TEST_F(feature_drafter_test, a_sampled_sequence_draws_its_proposal_from_the_q_it_sends) {
  auto d = feature_drafter::create(map_, target_, backend()->thread_pool());
  ASSERT_TRUE(d) << d.err().what();
  const size_t nv = target_->config().n_vocab, e = target_->config().n_embd;
  std::vector<float> hidden(e);
  for (size_t i = 0; i < e; ++i) hidden[i] = std::sin(0.37f * static_cast<float>(i));
  const std::vector<int32_t> history = prompts()[3];
  sampling_params sp = test::unfiltered(1.3f, 8);
  auto propose = [&](uint64_t seq, uint64_t seed, int k) {
    sp.seed = seed;
    EXPECT_TRUE((*d)->begin(seq, history, sp));
    (*d)->observe_hidden(seq, history, hidden);
    auto p = (*d)->propose(seq, history, k);
    EXPECT_TRUE(p);
    (*d)->end(seq);
    return p ? *p : draft_proposal{};
  };
  const draft_proposal first = propose(1, 42, 3);
  ASSERT_FALSE(first.tokens.empty());
  ASSERT_EQ(first.probs.size(), first.tokens.size());
  std::vector<bool> candidate(nv, false);
  for (int32_t t : map_.vocab) candidate[static_cast<size_t>(t)] = true;
  for (size_t i = 0; i < first.tokens.size(); ++i) {
    const auto& q = first.probs[i];
    ASSERT_EQ(q.size(), nv);
    double sum = 0;
    for (size_t t = 0; t < nv; ++t) {
      sum += q[t];
      if (!candidate[t]) {
        EXPECT_EQ(q[t], 0.0f) << "token " << t << " is not a candidate";
      }
    }
    EXPECT_NEAR(sum, 1.0, 1e-4);
    EXPECT_GT(q[static_cast<size_t>(first.tokens[i])], 0.0f);
  }
  const draft_proposal again = propose(2, 42, 3);
  EXPECT_EQ(again.tokens, first.tokens);
  EXPECT_EQ(again.probs, first.probs);
  // Over seeds: the first token's frequencies against q (the same q for every seed).
  const std::vector<float>& q = first.probs[0];
  const int trials = 4000;
  std::vector<int> counts(nv, 0);
  for (int t = 0; t < trials; ++t) ++counts[static_cast<size_t>(propose(3, 1000 + t, 1).tokens.at(0))];
  const auto c = test::chi_square(counts, q, trials);
  ASSERT_GT(c.df, 3) << "q too peaked for the test";
  EXPECT_LT(c.chi2, c.limit()) << "df=" << c.df;
  // A greedy sequence: the argmax, no q.
  EXPECT_TRUE((*d)->begin(4, history, greedy(8)));
  (*d)->observe_hidden(4, history, hidden);
  auto g = (*d)->propose(4, history, 1);
  ASSERT_TRUE(g && g->tokens.size() == 1);
  EXPECT_TRUE(g->probs.empty());
  EXPECT_EQ(g->tokens[0], static_cast<int32_t>(std::max_element(q.begin(), q.end()) - q.begin()));
  (*d)->end(4);
  // Through the generator, sampled: drafts both accepted and rejected, no KV left behind.
  auto be = backend();
  k_policy_config kc;
  kc.adaptive = false;
  kc.fixed_k = 2;
  generator spec(*target_, *be, generator_options{512, 512, false, d->get(), k_policy(kc)});
  uint64_t drafted = 0, accepted = 0;
  for (const auto& p : prompts()) {
    sampling_params s = test::unfiltered(0.8f, 40);
    s.seed = 7 + p.size();
    auto r = spec.run(p, s);
    ASSERT_TRUE(r) << r.err().what();
    drafted += r->spec.draft_tokens;
    accepted += r->spec.accepted_tokens;
  }
  EXPECT_GT(accepted, 0u);
  EXPECT_LT(accepted, drafted);
  EXPECT_EQ(be->kv_pool().used_blocks(), 0u);
}

/// Six sequences decoded together with k = 3, drafted locally (one proposal after another, in
/// the decoder's thread) or through a draft pipeline that asks the draft for the whole batch at
/// once (drafter::propose_batch, what the draft actor does); each sequence's tokens and the
/// speculation counters.
struct batch_outcome {
  std::map<uint64_t, std::vector<int32_t>> tokens;
  spec_stats spec;
  draft_pipeline_stats pipe;
};

batch_outcome decode_batch(const std::shared_ptr<const model>& m, cpu_backend& be, drafter& d,
                           const std::vector<std::vector<int32_t>>& prompts, bool batched) {
  batch_outcome out;
  // A fixed k: with k = auto the speculation gate times the drafting, which differs between the
  // two ways (and would turn one of them off on this tiny model).
  k_policy_config kc;
  kc.adaptive = false;
  kc.fixed_k = 3;
  batch_decoder dec(*m, be, 8);
  std::optional<draft_pipeline> pipe;
  if (batched) {
    dec.set_remote_speculation({d.scores_proposals(), d.wants_hidden()}, k_policy(kc));
    pipe.emplace(d, false);
  } else {
    dec.set_speculation(&d, k_policy(kc));
  }
  const auto nv = static_cast<int32_t>(m->config().n_vocab);
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto seq = std::make_unique<sequence>(i + 1, prompts[i], greedy(40), nv, 40);
    seq->kv() = *be.kv_pool().allocate(0);
    forward_result r;
    EXPECT_TRUE(prefill_tokens(be, seq->kv(), prompts[i].data(), prompts[i].size(), 0, 512, r));
    out.tokens[i + 1].push_back(seq->advance(r.logits, m->vocab()).token);
    if (pipe) {
      EXPECT_TRUE(pipe->begin(i + 1, seq->history(), greedy(40)));
    }
    dec.add(std::move(seq));
  }
  while (dec.active() > 0) {
    auto res = test::pipeline_step(dec, pipe ? &*pipe : nullptr);
    EXPECT_TRUE(res.failed.empty());
    for (const auto& e : res.events)
      if (e.token >= 0) out.tokens[e.id].push_back(e.token);
  }
  out.spec = dec.speculation_stats();
  if (pipe) out.pipe = pipe->stats();
  return out;
}

TEST_F(feature_drafter_test, a_batch_drafted_at_once_proposes_what_one_by_one_drafting_does) {
  // The feature draft's chains of six sequences advance together (one product of the map and
  // one of the head per position for all of them): the same proposals, the same verdicts and
  // the same learned acceptance as drafting them one after another; also through the hybrid.
  auto be = backend();
  const auto all = prompts();
  const std::vector<std::vector<int32_t>> six(all.begin(), all.begin() + 6);
  for (const bool hybrid : {false, true}) {
    auto make = [&]() -> std::unique_ptr<drafter> {
      auto f = feature_drafter::create(map_, target_, backend()->thread_pool());
      EXPECT_TRUE(f) << f.err().what();
      if (!hybrid) return std::move(*f);
      return std::make_unique<hybrid_drafter>(std::make_unique<ngram_drafter>(1), std::move(*f));
    };
    auto one = make();
    auto batch = make();
    const batch_outcome a = decode_batch(target_, *be, *one, six, false);
    const batch_outcome b = decode_batch(target_, *be, *batch, six, true);
    EXPECT_EQ(a.tokens, b.tokens) << (hybrid ? "hybrid" : "feature");
    EXPECT_EQ(a.spec.steps, b.spec.steps);
    EXPECT_EQ(a.spec.draft_tokens, b.spec.draft_tokens);
    EXPECT_EQ(a.spec.accepted_tokens, b.spec.accepted_tokens);
    EXPECT_GT(b.spec.draft_tokens, 0u);
    // The pipeline drafted each step's proposals right after the previous verdicts (as the draft
    // actor does): most asks were answered from those, the rest (a shorter k near the end, the
    // first ask) drafted anew, and the tokens above are the same either way.
    EXPECT_GT(b.pipe.hits * 2, b.pipe.asks) << b.pipe.hits << " of " << b.pipe.asks;
    EXPECT_LE(b.pipe.hits, b.pipe.ahead);
    EXPECT_LT(b.pipe.hits, b.pipe.asks);
  }
  EXPECT_EQ(be->kv_pool().used_blocks(), 0u);
}

TEST_F(feature_drafter_test, a_map_of_another_width_or_vocabulary_is_refused) {
  feature_map other = map_;
  other.n_vocab += 1;
  auto d = feature_drafter::create(other, target_, backend()->thread_pool());
  ASSERT_FALSE(d);
  EXPECT_NE(d.err().message.find("tokens"), std::string::npos) << d.err().message;
}

TEST_F(feature_drafter_test, malformed_map_files_get_clear_errors) {
  auto expect_error = [](const std::string& path, const std::string& needle) {
    auto m = load_feature_map(path);
    ASSERT_FALSE(m) << path;
    EXPECT_NE(m.err().message.find(needle), std::string::npos) << m.err().message;
  };
  // A model file is not a feature map.
  expect_error(test::temp_dir() + "/feature_target.gguf", "not a flywheel feature map");
  expect_error(test::temp_dir() + "/no_such_map.gguf", "no_such_map");
  const uint32_t e = map_.n_embd;
  auto write = [&](const std::string& name, uint32_t version, std::vector<int32_t> vocab, std::vector<uint64_t> ne,
                   float poison) {
    gguf_writer w;
    w.add_uint32("flywheel.feature.version", version);
    w.add_uint32("flywheel.feature.n_embd", e);
    w.add_uint32("flywheel.feature.n_vocab", map_.n_vocab);
    w.add_int32_array("flywheel.feature.vocab", vocab);
    std::vector<float> data(static_cast<size_t>(ne[0] * ne[1]), 0.5f);
    data[0] = poison;
    w.add_tensor("feature.map", ne, ggml_type::f32,
                 std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size() * sizeof(float)));
    const std::string path = test::temp_dir() + "/" + name + ".gguf";
    EXPECT_TRUE(w.write(path));
    return path;
  };
  expect_error(write("map_v1", 1, {3}, {2 * e, e}, 0), "version 1, this build reads 2");
  expect_error(write("map_v9", 9, {3}, {3 * e, e}, 0), "version 9");
  expect_error(write("map_bad_token", 2, {static_cast<int32_t>(map_.n_vocab)}, {3 * e, e}, 0), "outside the vocabulary");
  expect_error(write("map_bad_shape", 2, {3}, {2 * e, e}, 0), "[3 n_embd, n_embd]");
  expect_error(write("map_nan", 2, {3}, {3 * e, e}, std::numeric_limits<float>::quiet_NaN()), "non-finite");
  // A valid hand-made map loads.
  EXPECT_TRUE(load_feature_map(write("map_ok", 2, {3, 4}, {3 * e, e}, 0)));
}

TEST_F(feature_drafter_test, the_factory_builds_feature_and_hybrid_and_says_how_to_make_a_missing_map) {
  const std::string path = test::temp_dir() + "/factory_map.gguf";
  ASSERT_TRUE(save_feature_map(map_, path));
  auto be = backend();
  speculative_section spec;
  spec.feature_map = path;
  for (const char* kind : {"feature", "hybrid"}) {
    spec.draft = *enum_from_name(draft_kind_names, kind);
    auto d = make_drafter(spec, target_, *be, 1024);
    ASSERT_TRUE(d) << d.err().what();
    ASSERT_TRUE(*d);
    EXPECT_EQ((*d)->name(), kind);
    EXPECT_TRUE((*d)->wants_hidden());
  }
  // A missing map is fitted on first use on feature_prompts (runtime_parts_test); with no prompt
  // file either, the error names both ways to get one.
  spec.feature_map = test::temp_dir() + "/not_fitted_yet.gguf";
  spec.feature_prompts = test::temp_dir() + "/no_such_prompts.txt";
  auto missing = make_drafter(spec, target_, *be, 1024);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.err().message.find("flywheel fit-draft --out " + spec.feature_map), std::string::npos)
      << missing.err().message;
  EXPECT_NE(missing.err().message.find("no_such_prompts.txt"), std::string::npos) << missing.err().message;
}

// Answers are generated several prompts per forward; that changes nothing in what is learned.
// With 20 or more prompts every 20th is held out and judges the cross-entropy refinement, which
// starts from the ridge solution and is kept only when it predicts the held-out tokens better.
TEST_F(feature_drafter_test, fit_answers_in_batches_and_judges_its_refinement_on_held_out_prompts) {
  std::vector<std::vector<int32_t>> ps;
  for (int i = 0; i < 40; ++i) {
    std::vector<int32_t> p;
    for (int j = 0; j < 5 + i % 9; ++j) p.push_back(3 + (j * (i + 3) + 5 * i) % 60);
    ps.push_back(p);
  }
  auto be = backend();
  feature_fit_options o;
  o.max_tokens = 24;
  o.epochs = 0;
  o.batch = 1;
  feature_fit_report one, many, refined;
  auto a = fit_feature_map(*target_, *be, *be->thread_pool(), ps, o, &one);
  o.batch = 8;
  auto b = fit_feature_map(*target_, *be, *be->thread_pool(), ps, o, &many);
  ASSERT_TRUE(a && b) << (a ? b.err().what() : a.err().what());
  EXPECT_EQ(one.held_out, 0u) << "nothing is held out without refinement";
  EXPECT_EQ(a->samples, b->samples);
  EXPECT_EQ(a->vocab, b->vocab);
  ASSERT_EQ(a->weights.size(), b->weights.size());
  float diff = 0;
  for (size_t i = 0; i < a->weights.size(); ++i) diff = std::max(diff, std::abs(a->weights[i] - b->weights[i]));
  EXPECT_LT(diff, 1e-3f) << "batched answers fit a different map";
  EXPECT_EQ(be->kv_pool().used_blocks(), 0u);
  // A pool with room for two answers at a time: the batch waits for answers to end.
  cpu_backend_options small;
  small.threads = 2;
  small.kv_tokens = 128;
  cpu_backend tight(target_->config(), target_->weights(), small);
  auto t = fit_feature_map(*target_, tight, *tight.thread_pool(), ps, o);
  ASSERT_TRUE(t) << t.err().what();
  EXPECT_EQ(t->samples, a->samples);
  EXPECT_EQ(tight.kv_pool().used_blocks(), 0u);

  o.epochs = 8;
  o.learning_rate = 3e-3;  // few pairs here: few minibatches per epoch
  auto c = fit_feature_map(*target_, *be, *be->thread_pool(), ps, o, &refined);
  ASSERT_TRUE(c) << c.err().what();
  EXPECT_GT(refined.held_out, 0u);
  EXPECT_EQ(refined.pairs + refined.held_out, a->samples) << "every pair is either trained on or held out";
  EXPECT_EQ(c->samples, refined.pairs);
  EXPECT_GT(refined.ridge_accuracy, 0.0);
  EXPECT_GT(refined.epochs_kept, 0) << "the refinement never beat the ridge solution on held-out prompts";
  EXPECT_GT(refined.accuracy, refined.ridge_accuracy);
  EXPECT_NE(c->weights, b->weights);
  std::printf("held-out next-token accuracy: ridge %.3f, refined %.3f (epoch %d)\n", refined.ridge_accuracy,
              refined.accuracy, refined.epochs_kept);
}

TEST_F(feature_drafter_test, fit_needs_enough_pairs) {
  auto be = backend();
  feature_fit_options o;
  o.max_tokens = 4;
  auto m = fit_feature_map(*target_, *be, *be->thread_pool(), {{3, 4, 5}}, o);
  ASSERT_FALSE(m);
  EXPECT_NE(m.err().message.find("training pairs"), std::string::npos) << m.err().message;
}

}  // namespace
}  // namespace fw
