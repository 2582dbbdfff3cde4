// Speculative decoding on tiny models: greedy output identical to plain decoding for every
// draft kind, rejection sampling keeps the target's distribution (chi-square), rollback leaks
// nothing, and the k policy's decisions.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "runtime/cpu_backend.hpp"
#include "runtime/drafter_factory.hpp"
#include "runtime/plugin_host.hpp"
#include "runtime/generator.hpp"
#include "runtime/k_policy.hpp"
#include "runtime/model_drafter.hpp"
#include "runtime/ngram_drafter.hpp"
#include "runtime/verify_cost.hpp"
#include "tests/unit/test_models.hpp"
#include "tests/sampling_presets.hpp"

namespace fw {
namespace {

using ::fw::test::greedy;

std::shared_ptr<const model> tiny(ggml_type t, uint64_t seed, const std::string& tag, weight_load_options o = {}) {
  tiny_model_spec spec;
  spec.weight_type = t;
  spec.seed = seed;
  spec.n_layer = 4;
  auto m = test::load_tiny(spec, tag);
  if (o.convert_to || o.max_layers) {
    auto r = model::load(test::temp_dir() + "/" + tag + ".gguf", o);
    EXPECT_TRUE(r) << r.err().what();
    return r ? *r : nullptr;
  }
  return m;
}

class speculative_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { target_ = tiny(ggml_type::q8_0, 3, "spec_target"); }
  static void TearDownTestSuite() { target_.reset(); }

  std::unique_ptr<cpu_backend> backend() const {
    cpu_backend_options o;
    o.threads = 2;
    o.kv_tokens = 1024;
    return std::make_unique<cpu_backend>(target_->config(), target_->weights(), o);
  }
  // Prompts with repetition so n-gram lookup has something to find.
  static std::vector<std::vector<int32_t>> prompts() {
    std::vector<std::vector<int32_t>> ps;
    for (int i = 0; i < 8; ++i) {
      std::vector<int32_t> p;
      for (int j = 0; j < 12 + i * 3; ++j) p.push_back(3 + (j * (i + 5) + i) % 40);
      ps.push_back(p);
    }
    return ps;
  }
  void expect_greedy_identical(drafter& d, int k_fixed) {
    auto be = backend();
    k_policy_config kc;
    kc.adaptive = k_fixed == 0;
    kc.fixed_k = k_fixed;
    generator plain(*target_, *be, generator_options{512, 512, false});
    generator spec(*target_, *be, generator_options{512, 512, false, &d, k_policy(kc)});
    uint64_t drafted = 0;
    for (const auto& p : prompts()) {
      auto a = plain.run(p, greedy(64));
      auto b = spec.run(p, greedy(64));
      ASSERT_TRUE(a && b);
      EXPECT_EQ(a->tokens, b->tokens) << "draft " << d.name();
      EXPECT_EQ(a->text, b->text);
      EXPECT_TRUE(b->spec_used);
      drafted += b->spec.draft_tokens;
      EXPECT_LE(b->spec.accepted_tokens, b->spec.draft_tokens);
    }
    EXPECT_GT(drafted, 0u) << "draft " << d.name() << " never proposed anything";
    EXPECT_EQ(be->kv_pool().used_blocks(), 0u) << "target KV leaked";
  }

  static inline std::shared_ptr<const model> target_;
};

TEST_F(speculative_test, verify_cost_calibration_measures_rows_and_leaves_the_pool_as_it_was) {
  auto be = backend();
  const uint32_t free_before = be->kv_pool().free_blocks();
  auto cost = calibrate_verify_cost(*be, 6, 32, 2);
  ASSERT_TRUE(cost) << cost.err().what();
  ASSERT_EQ(cost->size(), 7u);
  EXPECT_EQ((*cost)[0], 1.0);
  for (size_t k = 1; k < cost->size(); ++k) EXPECT_GE((*cost)[k], (*cost)[k - 1]);
  EXPECT_EQ(be->kv_pool().free_blocks(), free_before);
  // A pool too small for the context is an error value, and nothing leaks.
  cpu_backend_options o;
  o.threads = 1;
  o.kv_tokens = 16;
  cpu_backend small(target_->config(), target_->weights(), o);
  auto none = calibrate_verify_cost(small, 8, 64, 1);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.err().code, errc::out_of_memory);
  EXPECT_EQ(small.kv_pool().free_blocks(), small.kv_pool().total_blocks());
}

TEST_F(speculative_test, ngram_draft_is_lossless_under_greedy) {
  ngram_drafter d(3);
  expect_greedy_identical(d, 5);
}

TEST_F(speculative_test, layer_skip_draft_is_lossless_under_greedy) {
  weight_load_options o;
  o.max_layers = 2;
  auto draft_m = model::load(test::temp_dir() + "/spec_target.gguf", o);
  ASSERT_TRUE(draft_m);
  EXPECT_EQ((*draft_m)->config().n_layer, 2u);
  cpu_backend_options bo;
  bo.kv_tokens = 1024;
  auto d = model_drafter::create("layer-skip", *draft_m, *target_, bo);
  ASSERT_TRUE(d) << d.err().what();
  expect_greedy_identical(**d, 5);
  EXPECT_EQ((*d)->device().kv_pool().used_blocks(), 0u) << "draft KV leaked";
}

TEST_F(speculative_test, self_quant_draft_is_lossless_under_greedy_and_mostly_accepted) {
  weight_load_options o;
  o.convert_to = ggml_type::q4_0;
  auto draft_m = model::load(test::temp_dir() + "/spec_target.gguf", o);
  ASSERT_TRUE(draft_m);
  auto d = model_drafter::create("self-quant", *draft_m, *target_, cpu_backend_options{2, 1024});
  ASSERT_TRUE(d) << d.err().what();
  expect_greedy_identical(**d, 0);  // adaptive k
}

TEST_F(speculative_test, separate_model_draft_is_lossless_and_same_model_draft_is_fully_accepted) {
  auto other = tiny(ggml_type::f16, 99, "spec_other_draft");  // a different model, same vocabulary
  auto d1 = model_drafter::create("model", other, *target_, cpu_backend_options{2, 1024});
  ASSERT_TRUE(d1) << d1.err().what();
  expect_greedy_identical(**d1, 4);

  // The target as its own draft: every proposal must be accepted (checks the KV bookkeeping).
  auto d2 = model_drafter::create("model", target_, *target_, cpu_backend_options{2, 1024});
  ASSERT_TRUE(d2);
  auto be = backend();
  k_policy_config kc;
  kc.adaptive = false;
  kc.fixed_k = 4;
  generator spec(*target_, *be, generator_options{512, 512, false, d2->get(), k_policy(kc)});
  auto r = spec.run(prompts()[0], greedy(40));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->spec.accepted_tokens, r->spec.draft_tokens);
  EXPECT_NEAR(r->spec.mean_accepted_length(), 5.0, 1.01);
}

TEST_F(speculative_test, plugin_draft_through_the_host_is_lossless_under_greedy) {
  plugin_host host;
  auto info = host.load("draft_ngram", std::string(FW_BINARY_DIR) + "/plugins/libdraft_ngram.so");
  ASSERT_TRUE(info) << info.err().what();
  speculative_section spec;
  spec.draft = "plugin:draft_ngram";
  auto be = backend();
  auto d = make_drafter(spec, target_, *be, 1024, &host);
  ASSERT_TRUE(d) << d.err().what();
  EXPECT_EQ((*d)->name(), "draft_ngram");
  EXPECT_EQ(host.find("draft_ngram")->users, 1);
  expect_greedy_identical(**d, 5);
  spec.draft = "plugin:not_loaded";
  auto missing = make_drafter(spec, target_, *be, 1024, &host);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.err().message.find("not_loaded"), std::string::npos) << missing.err().message;
}

TEST_F(speculative_test, draft_with_another_vocabulary_is_refused) {
  tiny_model_spec spec;
  spec.seed = 4;
  auto m = test::load_tiny(spec, "spec_vocab_a");
  ASSERT_TRUE(m);
  // Same size, one token's text changed: write a model whose vocabulary differs.
  auto bytes = make_tiny_model(spec);
  ASSERT_TRUE(bytes);
  std::string s(bytes->begin(), bytes->end());
  const auto pos = s.find("<|im_end|>");
  ASSERT_NE(pos, std::string::npos);
  s[pos + 2] = 'X';  // "<|Xm_end|>"
  const std::string path = test::temp_dir() + "/spec_vocab_b.gguf";
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(s.data(), 1, s.size(), f);
  std::fclose(f);
  auto other = model::load(path);
  ASSERT_TRUE(other) << other.err().what();
  auto d = model_drafter::create("model", *other, *m, cpu_backend_options{});
  ASSERT_FALSE(d);
  EXPECT_NE(d.err().message.find("vocabulary"), std::string::npos) << d.err().message;
}

// Rejection sampling with real logits: the first token's empirical distribution over many seeds
// must be the target's softmax, whatever the draft's distribution q.
TEST_F(speculative_test, rejection_sampling_keeps_the_target_distribution) {
  auto be = backend();
  auto draft_m = tiny(ggml_type::f32, 77, "spec_q_draft");
  cpu_backend_options dopts;
  dopts.threads = 1;
  dopts.kv_tokens = 256;
  cpu_backend dbe(draft_m->config(), draft_m->weights(), dopts);
  const auto prompt = prompts()[2];
  const size_t nv = target_->config().n_vocab;
  // Target logits at the first generated position (two rows: the proposal's position too).
  auto logits_of = [&](fw::backend& b, const model&) {
    kv_handle h = *b.kv_pool().allocate(0);
    forward_batch batch;
    std::vector<float> out;
    batch.add_sequence(&h, prompt.data(), prompt.size(), 0, false);
    EXPECT_TRUE(b.forward(batch, out));
    (void)b.kv_pool().release(h);
    return out;
  };
  std::vector<float> rows = logits_of(*be, *target_);
  rows.insert(rows.end(), rows.begin(), rows.end());  // the bonus row is not reached in this test's first token
  const std::vector<float> dlog = logits_of(dbe, *draft_m);
  sampling_params sp = test::unfiltered(1.5f, 8);
  sampler ref(sp, static_cast<int32_t>(nv));
  const std::vector<float> p = ref.probabilities(std::span<const float>(rows.data(), nv), prompt);
  const std::vector<float> q = ref.probabilities(dlog, prompt);
  std::mt19937_64 rng(5);
  std::discrete_distribution<int32_t> draw_q(q.begin(), q.end());
  const int trials = 20000;
  std::vector<int> counts(nv, 0);
  int accepted_total = 0;
  for (int t = 0; t < trials; ++t) {
    sp.seed = 1000 + t;
    sequence s(1, prompt, sp, static_cast<int32_t>(nv), 8);
    draft_proposal prop;
    prop.tokens.push_back(draw_q(rng));
    prop.probs.push_back(q);
    int accepted = 0;
    auto outs = s.advance_speculative(rows, prop, target_->vocab(), &accepted);
    ASSERT_FALSE(outs.empty());
    ++counts[outs[0].token];
    accepted_total += accepted;
  }
  // Chi-square over bins with expected count >= 5 (the rest pooled).
  double chi2 = 0, pooled_e = 0, pooled_o = 0;
  int bins = 0;
  for (size_t i = 0; i < nv; ++i) {
    const double e = p[i] * trials;
    if (e >= 5) {
      chi2 += (counts[i] - e) * (counts[i] - e) / e;
      ++bins;
    } else {
      pooled_e += e;
      pooled_o += counts[i];
    }
  }
  if (pooled_e >= 5) {
    chi2 += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
    ++bins;
  }
  const double df = bins - 1;
  ASSERT_GT(df, 5);
  // Far beyond the 99.9th percentile of chi-square(df) for correct sampling.
  EXPECT_LT(chi2, df + 6 * std::sqrt(2 * df)) << "df=" << df;
  EXPECT_GT(accepted_total, 0);
  EXPECT_LT(accepted_total, trials);
}

TEST(ngram_lookup, proposes_the_continuation_of_the_latest_match) {
  const std::vector<int32_t> h{1, 2, 3, 4, 5, 9, 1, 2, 3, 7, 8, 1, 2, 3};
  EXPECT_EQ(ngram_lookup(h, 3, 2), (std::vector<int32_t>{7, 8}));  // latest match wins
  EXPECT_EQ(ngram_lookup(h, 3, 5), (std::vector<int32_t>{7, 8, 1, 2, 3}));
  const std::vector<int32_t> h2{5, 6, 7, 8, 6};
  EXPECT_EQ(ngram_lookup(h2, 3, 3), (std::vector<int32_t>{7, 8, 6}));  // falls back to n = 1
  const std::vector<int32_t> h3{1, 2, 3};
  EXPECT_TRUE(ngram_lookup(h3, 3, 4).empty());
}

TEST(k_policy, fixed_by_prompt_by_entropy_and_bandwidth) {
  k_policy_config c;
  c.adaptive = false;
  EXPECT_EQ(k_policy(c).initial_k(10), 5);
  c.adaptive = true;
  k_policy p(c);
  EXPECT_EQ(p.initial_k(10), 3);
  EXPECT_EQ(p.initial_k(200), 5);
  EXPECT_EQ(p.initial_k(10, 3.0f), 3);
  EXPECT_EQ(p.initial_k(10, 1.0f), 5);
  c.bandwidth_gbs = 200;
  EXPECT_EQ(k_policy(c).bandwidth_cap(), 5);
  c.bandwidth_gbs = 400;
  EXPECT_EQ(k_policy(c).bandwidth_cap(), 7);
  c.bandwidth_gbs = 100;
  EXPECT_EQ(k_policy(c).bandwidth_cap(), 3);
  EXPECT_EQ(k_policy(c).initial_k(200), 3);
}

TEST(k_policy, cost_aware_k_maximizes_tokens_per_step_cost) {
  k_policy_config c;
  c.verify_cost = {1.0, 1.09, 1.19, 1.39, 1.6, 1.8, 2.07, 2.4, 2.8};  // measured shape on a 2-core CPU
  const k_policy p(c);
  EXPECT_EQ(p.best_k(0.0, 8), 0);   // nothing accepted: plain decoding
  EXPECT_EQ(p.best_k(0.05, 8), 0);  // 1.05 tokens for 1.09: still plain
  EXPECT_EQ(p.best_k(0.17, 8), 1);  // 1.17 / 1.09 = 1.07 beats 1
  EXPECT_EQ(p.best_k(0.45, 8), 2);  // 1.65 / 1.19 beats 1.45 / 1.09 and 1.74 / 1.39
  EXPECT_GE(p.best_k(0.95, 8), 5);  // nearly always right: long drafts pay
  EXPECT_LE(p.best_k(0.95, 3), 3);  // ... within the cap
  // Free verification (a GPU or AMX): any acceptance above 0 wants the longest draft.
  k_policy_config flat;
  flat.verify_cost.assign(9, 1.0);
  EXPECT_EQ(k_policy(flat).best_k(0.2, 8), 8);
  // observe() follows it: a miss streak goes to 0 and re-probes; 50% acceptance settles at k = 2.
  k_state t = p.start(200);
  for (int i = 0; i < 10; ++i) p.observe(t, std::max(t.k, 1), 0);
  EXPECT_EQ(t.k, 0);
  for (int i = 0; i < c.reprobe_every; ++i) p.observe(t, 0, 0);
  EXPECT_EQ(t.k, 1);  // probing again
  k_state u = p.start(200);
  for (int i = 0; i < 10; ++i) p.observe(u, 4, 2);  // 50% acceptance
  EXPECT_EQ(u.k, 2);
}

TEST(k_policy, adaptive_backs_off_to_zero_reprobes_and_grows) {
  k_policy p{k_policy_config{}};
  k_state s = p.start(200);
  ASSERT_EQ(s.k, 5);
  for (int i = 0; i < 20; ++i) p.observe(s, p.k_for(s, 1000), 0);
  EXPECT_EQ(s.k, 0) << "poor acceptance must turn speculation off";
  EXPECT_EQ(p.k_for(s, 1000), 0);
  for (int i = 0; i < p.config().reprobe_every; ++i) p.observe(s, 0, 0);
  EXPECT_EQ(s.k, 1) << "it probes again after a while";
  for (int i = 0; i < 20; ++i) p.observe(s, s.k, s.k);
  EXPECT_EQ(s.k, p.config().k_max);
  EXPECT_EQ(p.k_for(s, 3), 2) << "never more than the remaining budget allows";
}

}  // namespace
}  // namespace fw
