// Speculative decoding on tiny models: greedy output identical to plain decoding for every
// draft kind, rejection sampling keeps the target's distribution (chi-square), rollback leaks
// nothing, and the k policy's decisions.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "runtime/step/batch_decoder.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "runtime/plugin/plugin_host.hpp"
#include "runtime/step/generator.hpp"
#include "runtime/spec/k_policy.hpp"
#include "runtime/spec/drafts/draft_pipeline.hpp"
#include "runtime/spec/drafts/model_drafter.hpp"
#include "runtime/spec/drafts/ngram_drafter.hpp"
#include "runtime/device/prefill.hpp"
#include "runtime/device/verify_cost.hpp"
#include "tests/support/chi_square.hpp"
#include "tests/support/pipeline_step.hpp"
#include "tests/support/test_models.hpp"
#include "tests/support/sampling_presets.hpp"

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
  /// A separate draft model's own backend (2 threads, 1024 KV tokens).
  static std::unique_ptr<fw::backend> draft_backend(const model& m) {
    cpu_backend_options o;
    o.threads = 2;
    o.kv_tokens = 1024;
    return std::make_unique<cpu_backend>(m.config(), m.weights(), o);
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
  /// `shared`: the backend the draft runs on (layer-skip); otherwise a fresh one.
  void expect_greedy_identical(drafter& d, int k_fixed, cpu_backend* shared = nullptr) {
    auto own = shared ? nullptr : backend();
    cpu_backend* be = shared ? shared : own.get();
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
  ngram_drafter d(1);
  expect_greedy_identical(d, 5);
}

TEST_F(speculative_test, a_request_caps_or_turns_off_its_own_speculation) {
  ngram_drafter d(1);
  auto be = backend();
  k_policy_config kc;
  kc.fixed_k = 5;
  generator spec(*target_, *be, generator_options{512, 512, false, &d, k_policy(kc)});
  generator plain(*target_, *be, generator_options{512, 512, false});
  uint64_t capped_drafted = 0;
  for (const auto& p : prompts()) {
    auto off = greedy(48);
    off.max_draft_k = 0;
    auto a = spec.run(p, off);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->spec.draft_tokens, 0u);  // drafts off for this request only
    auto capped = greedy(48);
    capped.max_draft_k = 2;
    auto b = spec.run(p, capped);
    ASSERT_TRUE(b);
    for (size_t pos = 2; pos < b->spec.proposed_at.size(); ++pos) EXPECT_EQ(b->spec.proposed_at[pos], 0u) << pos;
    capped_drafted += b->spec.draft_tokens;
    auto ref = plain.run(p, greedy(48));
    ASSERT_TRUE(ref);
    EXPECT_EQ(a->tokens, ref->tokens);  // both still the target's greedy answer
    EXPECT_EQ(b->tokens, ref->tokens);
  }
  EXPECT_GT(capped_drafted, 0u);
  auto bad = greedy(8);
  bad.max_draft_k = 17;
  EXPECT_FALSE(bad.validate());
}

TEST_F(speculative_test, ngram_draft_with_auto_k_verifies_a_scored_prefix_and_stays_lossless) {
  ngram_drafter d(1);
  expect_greedy_identical(d, 0);  // k = auto: proposals trimmed by their acceptance estimates
}

TEST_F(speculative_test, layer_skip_draft_is_lossless_under_greedy) {
  auto be = backend();
  auto d = model_drafter::create_layer_skip(target_, *be, 2);
  ASSERT_TRUE(d) << d.err().what();
  expect_greedy_identical(**d, 5, be.get());
  expect_greedy_identical(**d, 0, be.get());  // k = auto
  EXPECT_FALSE(model_drafter::create_layer_skip(target_, *be, 0));
  EXPECT_FALSE(model_drafter::create_layer_skip(target_, *be, target_->config().n_layer));
}

// Layer-skip reads the target's KV instead of keeping its own: it proposes what the target's
// first layers loaded as a separate model (with their own KV) propose, keeps no blocks of its
// own, and leaves the target's handle as long as it found it.
TEST_F(speculative_test, layer_skip_draft_over_the_target_kv_matches_a_separate_truncated_model) {
  weight_load_options o;
  o.max_layers = 2;
  auto draft_m = model::load(test::temp_dir() + "/spec_target.gguf", o);
  ASSERT_TRUE(draft_m);
  ASSERT_EQ((*draft_m)->config().n_layer, 2u);
  auto separate = model_drafter::create("layer-skip", *draft_m, *target_, draft_backend(**draft_m));
  ASSERT_TRUE(separate) << separate.err().what();
  auto be = backend();
  auto shared = model_drafter::create_layer_skip(target_, *be, 2);
  ASSERT_TRUE(shared) << shared.err().what();
  const uint32_t blocks_before = be->kv_pool().used_blocks();
  forward_result prefilled;
  uint64_t seq = 0, same = 0, total = 0;
  for (const auto& p : prompts()) {
    ++seq;
    auto kv = be->kv_pool().allocate(0);
    ASSERT_TRUE(kv);
    // The target's KV holds every prompt token but the last, as the decoder leaves it.
    ASSERT_TRUE(prefill_tokens(*be, *kv, p.data(), p.size() - 1, 0, 64, prefilled));
    for (auto* d : {separate->get(), shared->get()}) ASSERT_TRUE(d->begin(seq, p, greedy(8)));
    (*shared)->bind_target_kv(seq, &*kv);
    auto a = (*separate)->propose(seq, p, 4);
    auto b = (*shared)->propose(seq, p, 4);
    ASSERT_TRUE(a && b) << (a ? b.err().what() : a.err().what());
    EXPECT_EQ(kv->n_tokens, p.size() - 1) << "the draft must leave the target's handle as it found it";
    ASSERT_EQ(a->tokens.size(), 4u);
    ASSERT_EQ(b->tokens.size(), 4u);
    for (size_t i = 0; i < 4; ++i) same += a->tokens[i] == b->tokens[i];
    total += 4;
    for (auto* d : {separate->get(), shared->get()}) d->end(seq);
    ASSERT_TRUE(be->kv_pool().release(*kv));
  }
  EXPECT_EQ(same, total) << "layer-skip over the target's KV proposed differently from the truncated model";
  EXPECT_EQ(be->kv_pool().used_blocks(), blocks_before);
  // Without the target's handle it says so instead of drafting blind.
  ASSERT_TRUE((*shared)->begin(99, prompts()[0], greedy(8)));
  auto unbound = (*shared)->propose(99, prompts()[0], 2);
  ASSERT_FALSE(unbound);
  EXPECT_NE(unbound.err().message.find("not bound"), std::string::npos) << unbound.err().message;
}

TEST_F(speculative_test, self_quant_draft_is_lossless_under_greedy_and_mostly_accepted) {
  weight_load_options o;
  o.convert_to = ggml_type::q4_0;
  auto draft_m = model::load(test::temp_dir() + "/spec_target.gguf", o);
  ASSERT_TRUE(draft_m);
  auto d = model_drafter::create("self-quant", *draft_m, *target_, draft_backend(**draft_m));
  ASSERT_TRUE(d) << d.err().what();
  expect_greedy_identical(**d, 0);  // adaptive k
}

TEST_F(speculative_test, separate_model_draft_is_lossless_and_same_model_draft_is_fully_accepted) {
  auto other = tiny(ggml_type::f16, 99, "spec_other_draft");  // a different model, same vocabulary
  auto d1 = model_drafter::create("model", other, *target_, draft_backend(*other));
  ASSERT_TRUE(d1) << d1.err().what();
  expect_greedy_identical(**d1, 4);

  // The target as its own draft: every proposal must be accepted (checks the KV bookkeeping).
  auto d2 = model_drafter::create("model", target_, *target_, draft_backend(*target_));
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
  auto host_ptr = std::make_shared<plugin_host>();
  plugin_host& host = *host_ptr;
  auto info = host.load("draft_ngram", std::string(FW_BINARY_DIR) + "/plugins/libdraft_ngram.so");
  ASSERT_TRUE(info) << info.err().what();
  speculative_section spec;
  spec.draft = draft_kind::plugin;
  spec.draft_plugin = "draft_ngram";
  auto be = backend();
  auto d = make_drafter(spec, target_, *be, 1024, host_ptr);
  ASSERT_TRUE(d) << d.err().what();
  EXPECT_EQ((*d)->name(), "draft_ngram");
  EXPECT_EQ(host.find("draft_ngram")->users, 1);
  expect_greedy_identical(**d, 5);
  spec.draft_plugin = "not_loaded";
  auto missing = make_drafter(spec, target_, *be, 1024, host_ptr);
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
  auto d = model_drafter::create("model", *other, *m, std::make_unique<cpu_backend>((*other)->config(), (*other)->weights(), cpu_backend_options{}));
  ASSERT_FALSE(d);
  EXPECT_NE(d.err().message.find("vocabulary"), std::string::npos) << d.err().message;
}

// Rejection sampling with real logits: the first token's empirical distribution over many seeds
// must be the target's softmax, whatever the draft's distribution q.
/// One sequence decoded by a batch decoder that drafts locally (mode local), or remotely through a
/// draft pipeline driven here in-process the way the draft actor drives it (asks, answers,
/// verdicts, run-ahead after each answer when `ahead`).
struct driven {
  std::vector<int32_t> tokens;
  spec_stats spec;
  draft_pipeline_stats pipe;
};
enum class drafting { local, remote, remote_ahead };

driven drive(const model& m, cpu_backend& be, drafter& d, k_policy pol, const std::vector<int32_t>& prompt,
             const sampling_params& sp, drafting mode) {
  driven out;
  const auto nv = static_cast<int32_t>(m.config().n_vocab);
  auto seq = std::make_unique<sequence>(1, prompt, sp, nv, static_cast<uint32_t>(sp.max_tokens));
  seq->kv() = *be.kv_pool().allocate(0);
  forward_result r;
  EXPECT_TRUE(prefill_tokens(be, seq->kv(), prompt.data(), prompt.size(), 0, 512, r));
  auto first = seq->advance(r.logits, m.vocab());
  out.tokens.push_back(first.token);
  if (first.finished) {
    (void)be.kv_pool().release(seq->kv());
    return out;
  }
  batch_decoder dec(m, be, 4);
  std::optional<draft_pipeline> pipe;
  if (mode == drafting::local) {
    dec.set_speculation(&d, pol);
  } else {
    dec.set_remote_speculation({d.scores_proposals(), d.wants_hidden()}, pol);
    pipe.emplace(d, mode == drafting::remote_ahead);
    EXPECT_TRUE(pipe->begin(1, seq->history(), sp));
  }
  // Runs compared step by step: the gate, which follows wall time, must not turn drafting off in
  // one of them because the machine was busier (a draft under twice a step's time is never gated).
  spec_gate_config never;
  never.min_draft_share = 2.0;
  dec.set_gate(spec_gate(never));
  dec.add(std::move(seq));
  while (dec.active() > 0) {
    auto res = test::pipeline_step(dec, pipe ? &*pipe : nullptr);
    EXPECT_TRUE(res.failed.empty());
    for (const auto& e : res.events)
      if (e.token >= 0) out.tokens.push_back(e.token);
  }
  out.spec = dec.speculation_stats();
  if (pipe) {
    out.pipe = pipe->stats();
    EXPECT_EQ(pipe->size(), 0u) << "the pipeline still holds a finished sequence";
  }
  return out;
}

TEST_F(speculative_test, drafting_through_a_pipeline_equals_local_drafting_token_for_token_when_sampling) {
  // The draft actor's path (remote drafting through a draft_pipeline) makes the same proposals as
  // a local draft and the same sampled choices from the same seeds: rejection sampling, and with
  // it the distribution test below, is the same code on both paths.
  auto other = tiny(ggml_type::f16, 99, "spec_other_draft");
  auto be = backend();
  k_policy_config kc;
  kc.adaptive = false;
  kc.fixed_k = 3;
  uint64_t drafted = 0;
  for (const auto& prompt : prompts()) {
    sampling_params sp = test::unfiltered(0.9f, 40);
    sp.seed = 7 + prompt.size();
    auto d1 = model_drafter::create("model", other, *target_, draft_backend(*other));
    auto d2 = model_drafter::create("model", other, *target_, draft_backend(*other));
    ASSERT_TRUE(d1 && d2);
    const driven local = drive(*target_, *be, **d1, k_policy(kc), prompt, sp, drafting::local);
    const driven remote = drive(*target_, *be, **d2, k_policy(kc), prompt, sp, drafting::remote);
    EXPECT_EQ(local.tokens, remote.tokens);
    EXPECT_EQ(local.spec.draft_tokens, remote.spec.draft_tokens);
    EXPECT_EQ(local.spec.accepted_tokens, remote.spec.accepted_tokens);
    EXPECT_EQ(remote.pipe.hits, 0u);
    drafted += remote.spec.draft_tokens;
  }
  EXPECT_GT(drafted, 0u);
  EXPECT_EQ(be->kv_pool().used_blocks(), 0u) << "target KV leaked";
}

TEST_F(speculative_test, the_decoder_times_every_step_for_the_cost_aware_policy) {
  // k = auto with a calibration: each step's forward time reaches the step-cost tracker under its
  // row count (1 for a plain step, 1 + drafted tokens for a verification). Fixed k: nothing to price.
  auto be = backend();
  ngram_drafter d(1);
  const auto all = prompts();
  const auto& prompt = all.front();
  auto decode = [&](const k_policy_config& kc, std::map<int, int>& rows) {
    auto seq = std::make_unique<sequence>(1, prompt, greedy(48), static_cast<int32_t>(target_->config().n_vocab), 48u);
    seq->kv() = *be->kv_pool().allocate(0);
    forward_result r;
    EXPECT_TRUE(prefill_tokens(*be, seq->kv(), prompt.data(), prompt.size(), 0, 512, r));
    seq->advance(r.logits, target_->vocab());
    batch_decoder dec(*target_, *be, 4);
    dec.set_speculation(&d, k_policy(kc));
    dec.add(std::move(seq));
    while (dec.active() > 0) {
      step_plan p = dec.plan();
      ++rows[static_cast<int>(p.seqs.front().rows())];
      dec.run(std::move(p));
    }
    return dec.step_costs();
  };
  k_policy_config kc;
  kc.verify_cost = {1.0, 1.07, 1.19, 1.34, 1.46, 1.63, 1.87, 2.13, 2.49};
  std::map<int, int> rows;
  const step_cost_tracker learned = decode(kc, rows);
  int steps = 0;
  for (int n = 1; n <= 9; ++n) {
    EXPECT_EQ(learned.samples(n), rows[n]) << n << " rows";
    steps += rows[n];
  }
  EXPECT_GT(steps, 16);
  kc.adaptive = false;
  std::map<int, int> fixed_rows;
  const step_cost_tracker fixed = decode(kc, fixed_rows);
  int fixed_steps = 0;
  for (int n = 1; n <= 9; ++n) {
    EXPECT_EQ(fixed.samples(n), 0) << n << " rows";
    fixed_steps += fixed_rows[n];
  }
  EXPECT_GT(fixed_steps, 16);  // steps ran, unrecorded
  EXPECT_EQ(be->kv_pool().used_blocks(), 0u);
}

TEST_F(speculative_test, a_scoring_draft_with_auto_k_verifies_the_same_prefixes_through_a_pipeline) {
  // k = auto with a scoring draft: the decoder trims each proposal to the prefix that pays, on
  // the local and the remote path alike (the same tokens verified, the same acceptance learned).
  auto be = backend();
  k_policy_config kc;
  kc.adaptive = true;
  kc.verify_cost = {1.0, 1.07, 1.19, 1.34, 1.46, 1.63, 1.87, 2.13, 2.49};
  kc.learn_step_costs = false;  // the same k choices in both runs, whatever the machine's load
  ngram_drafter d1(1), d2(1);
  uint64_t drafted = 0;
  for (const auto& prompt : prompts()) {
    const driven local = drive(*target_, *be, d1, k_policy(kc), prompt, greedy(64), drafting::local);
    const driven remote = drive(*target_, *be, d2, k_policy(kc), prompt, greedy(64), drafting::remote);
    EXPECT_EQ(local.tokens, remote.tokens);
    EXPECT_EQ(local.spec.steps, remote.spec.steps);
    EXPECT_EQ(local.spec.draft_tokens, remote.spec.draft_tokens);
    EXPECT_EQ(local.spec.accepted_tokens, remote.spec.accepted_tokens);
    drafted += remote.spec.draft_tokens;
  }
  EXPECT_GT(drafted, 0u);
}

TEST_F(speculative_test, a_draft_that_runs_ahead_uses_its_pre_drafts_on_a_hit_and_stays_lossless) {
  // The target as its own draft: every proposal is accepted and its guess of the target's next
  // token is right, so nearly every ask after the first is answered from the pre-draft. A
  // different model guesses wrong now and then: those pre-drafts are dropped. Greedy output is
  // plain decoding's either way.
  auto be = backend();
  auto other = tiny(ggml_type::f16, 99, "spec_other_draft");
  k_policy_config kc;
  kc.adaptive = false;
  kc.fixed_k = 4;
  generator plain(*target_, *be, generator_options{512, 512, false});
  for (const auto& [draft_model, all_hit] : {std::pair{target_, true}, std::pair{other, false}}) {
    auto d = model_drafter::create("model", draft_model, *target_, draft_backend(*draft_model));
    ASSERT_TRUE(d);
    ASSERT_TRUE((*d)->drafts_ahead());
    uint64_t asks = 0, hits = 0;
    for (const auto& prompt : prompts()) {
      auto ref = plain.run(prompt, greedy(40));
      ASSERT_TRUE(ref);
      const driven r = drive(*target_, *be, **d, k_policy(kc), prompt, greedy(40), drafting::remote_ahead);
      EXPECT_EQ(r.tokens, ref->tokens);
      EXPECT_LE(r.pipe.hits, r.pipe.ahead);
      EXPECT_LE(r.pipe.hidden_ms, r.pipe.ahead_ms + 1e-9);
      asks += r.pipe.asks;
      hits += r.pipe.hits;
    }
    if (all_hit) EXPECT_GE(hits * 10, asks * 8) << hits << " of " << asks << " asks answered ahead";
    else EXPECT_LT(hits, asks);
  }
  EXPECT_EQ(be->kv_pool().used_blocks(), 0u) << "target KV leaked";
}

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
  const auto c = test::chi_square(counts, p, trials);
  ASSERT_GT(c.df, 5);
  EXPECT_LT(c.chi2, c.limit()) << "df=" << c.df;
  EXPECT_GT(accepted_total, 0);
  EXPECT_LT(accepted_total, trials);
}

TEST(ngram_match, prefers_the_longest_agreeing_context_then_the_latest) {
  //                              0  1  2  3  4  5  6  7  8  9 10 11 12 13
  const std::vector<int32_t> h{1, 2, 3, 4, 5, 9, 2, 3, 7, 8, 1, 2, 3};
  // "1 2 3" occurs at 0..2 (continued by 4); "2 3" also at 6..7 (continued by 7), a shorter match.
  ngram_match m = longest_match(h, 64);
  EXPECT_EQ(m.length, 3);
  EXPECT_EQ(m.from, 3);
  EXPECT_EQ(longest_match(h, 2).length, 2);  // capped: the latest of the 2-token matches wins
  EXPECT_EQ(longest_match(h, 2).from, 8);
  const std::vector<int32_t> h2{5, 6, 7, 8, 6};
  EXPECT_EQ(longest_match(h2, 64).length, 1);
  EXPECT_EQ(longest_match(h2, 64).from, 2);
  const std::vector<int32_t> h3{1, 2, 3};
  EXPECT_EQ(longest_match(h3, 64).length, 0);
  EXPECT_EQ(longest_match(std::vector<int32_t>{4}, 64).length, 0);
}

TEST(ngram_drafter, scores_tokens_by_agreement_and_learns_from_verdicts) {
  ngram_drafter d(1);
  EXPECT_TRUE(d.scores_proposals());
  const std::vector<int32_t> h{10, 11, 12, 13, 14, 15, 16, 20, 10, 11, 12};
  auto p = d.propose(1, h, 3);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->tokens, (std::vector<int32_t>{13, 14, 15}));
  ASSERT_EQ(p->confidence.size(), 3u);
  // Each further token continues a longer agreeing context: estimates do not fall.
  EXPECT_LE(p->confidence[0], p->confidence[1]);
  EXPECT_LE(p->confidence[1], p->confidence[2]);
  // A one-token match is trusted less than a three-token one.
  auto weak = d.propose(2, std::vector<int32_t>{10, 11, 12, 30, 12}, 1);
  ASSERT_TRUE(weak);
  ASSERT_EQ(weak->confidence.size(), 1u);
  EXPECT_LT(weak->confidence[0], p->confidence[0]);
  // The target rejects the first token every time: the estimate for a 3-token context falls.
  const float before = d.estimate(3);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(d.propose(1, h, 3));
    std::vector<int32_t> after = h;
    after.push_back(99);  // the target's own token, not 13
    d.accept(1, after);
  }
  EXPECT_LT(d.estimate(3), before - 0.3f);
  EXPECT_NEAR(d.estimate(4), ngram_drafter{}.estimate(4), 1e-6) << "never verified";
  // ... and accepting every token raises the longer contexts' estimates.
  const float before5 = d.estimate(5);
  for (int i = 0; i < 20; ++i) {
    auto q = d.propose(1, h, 3);
    ASSERT_TRUE(q);
    std::vector<int32_t> after = h;
    after.insert(after.end(), q->tokens.begin(), q->tokens.end());
    after.push_back(16);
    d.accept(1, after);
  }
  EXPECT_GT(d.estimate(5), before5);
  d.end(1);
  d.end(2);
}

TEST(draft_pipeline, drafts_the_next_proposal_after_the_verdicts_and_answers_an_ask_of_that_k_from_it) {
  // A draft that proposes from the history alone (n-gram) is drafted right after a verdict, at
  // the k of the sequence's last ask: the next ask of that k gets exactly what drafting at the ask
  // gives (a second pipeline asked cold), counted as a hit; another k is drafted anew.
  ngram_drafter warm_draft(1), cold_draft(1);
  ASSERT_TRUE(warm_draft.proposes_from_history());
  draft_pipeline warm(warm_draft, false), cold(cold_draft, false);
  ASSERT_TRUE(warm.drafts_after_verdicts());
  const std::vector<int32_t> h{10, 11, 12, 13, 14, 15, 16, 20, 10, 11};
  ASSERT_TRUE(warm.begin(1, h, {}));
  ASSERT_TRUE(cold.begin(1, h, {}));
  const draft_ask ask3{1, 3, nullptr};
  const std::vector<uint64_t> ids{1};
  // Step 1: both asked cold; the target accepts one token and adds its own.
  auto w = warm.propose_batch(std::span<const draft_ask>(&ask3, 1));
  auto c = cold.propose_batch(std::span<const draft_ask>(&ask3, 1));
  ASSERT_EQ(w[0].proposal.tokens, (std::vector<int32_t>{12, 13, 14}));
  ASSERT_EQ(c[0].proposal.tokens, w[0].proposal.tokens);
  const std::vector<int32_t> appended{12, 13};
  warm.feedback(1, appended, {});
  cold.feedback(1, appended, {});
  warm.draft_after_verdicts(ids);
  EXPECT_EQ(warm.stats().ahead, 1u);
  EXPECT_EQ(warm.stats().hits, 0u);
  // Step 2: the warm pipeline answers from its verdict-time draft, the same proposal.
  w = warm.propose_batch(std::span<const draft_ask>(&ask3, 1));
  c = cold.propose_batch(std::span<const draft_ask>(&ask3, 1));
  EXPECT_EQ(warm.stats().hits, 1u);
  EXPECT_EQ(w[0].proposal.tokens, (std::vector<int32_t>{14, 15, 16}));
  EXPECT_EQ(w[0].proposal.tokens, c[0].proposal.tokens);
  EXPECT_EQ(w[0].proposal.confidence, c[0].proposal.confidence);
  EXPECT_LE(warm.stats().hidden_ms, warm.stats().ahead_ms + 1e-9);
  // Step 3: an ask of another k is drafted anew, not cut from the standing draft.
  const std::vector<int32_t> appended2{14};
  warm.feedback(1, appended2, {});
  cold.feedback(1, appended2, {});
  warm.draft_after_verdicts(ids);
  const draft_ask ask1{1, 1, nullptr};
  w = warm.propose_batch(std::span<const draft_ask>(&ask1, 1));
  c = cold.propose_batch(std::span<const draft_ask>(&ask1, 1));
  EXPECT_EQ(warm.stats().hits, 1u);
  EXPECT_EQ(warm.stats().asks, 3u);
  EXPECT_EQ(w[0].proposal.tokens, (std::vector<int32_t>{15}));
  EXPECT_EQ(w[0].proposal.tokens, c[0].proposal.tokens);
  // A verdict of a step that did not ask (it stepped plainly): nothing is drafted until the
  // sequence is asked again.
  const std::vector<int32_t> appended3{15};
  warm.feedback(1, appended3, {});
  warm.draft_after_verdicts(ids);
  const std::vector<int32_t> appended4{16};
  warm.feedback(1, appended4, {});
  const uint64_t drafted = warm.stats().ahead;
  EXPECT_EQ(drafted, 3u) << "the verdict after the third ask was drafted";
  warm.draft_after_verdicts(ids);
  EXPECT_EQ(warm.stats().ahead, drafted);
  // A sequence that ended is not drafted; nor one never asked.
  warm.end(1);
  warm.draft_after_verdicts(ids);
  ASSERT_TRUE(warm.begin(2, h, {}));
  const std::vector<uint64_t> two{2};
  warm.draft_after_verdicts(two);
  EXPECT_EQ(warm.stats().ahead, drafted);
}

TEST(k_policy, best_prefix_verifies_what_pays) {
  k_policy_config c;
  c.verify_cost = {1.0, 1.07, 1.19, 1.34, 1.46, 1.63, 1.87, 2.13, 2.49};
  const k_policy p(c);
  EXPECT_EQ(p.best_prefix(std::vector<float>{0.02f, 0.9f}), 0);  // first token hopeless: plain step
  EXPECT_EQ(p.best_prefix(std::vector<float>{0.2f, 0.2f, 0.2f}), 1);
  const std::vector<float> sure{0.9f, 0.9f, 0.92f, 0.92f, 0.92f, 0.92f, 0.92f, 0.92f};
  EXPECT_EQ(p.best_prefix(sure), 5);  // 4.77 tokens / 1.63 beats 6.37 / 2.49 at 8
  k_policy_config flat;
  flat.verify_cost.assign(9, 1.0);
  EXPECT_EQ(k_policy(flat).best_prefix(sure), 8);  // free rows: verify everything
  EXPECT_EQ(p.best_prefix(std::vector<float>{0.9f, 0.9f, 0.05f, 0.9f}), 2);  // stops before the doubtful one
  EXPECT_EQ(p.best_prefix(std::vector<float>{}), 0);
  // No cost measurement: every token up to the first estimate below lower_at.
  EXPECT_EQ(k_policy(k_policy_config{}).best_prefix(std::vector<float>{0.9f, 0.6f, 0.3f, 0.9f}), 2);
  // The length to ask for: the cap with k = auto, the fixed k otherwise, within what remains.
  EXPECT_EQ(p.k_for_scored(100), c.k_max);
  EXPECT_EQ(p.k_for_scored(3), 2);
  k_policy_config fixed = c;
  fixed.adaptive = false;
  fixed.fixed_k = 3;
  EXPECT_EQ(k_policy(fixed).k_for_scored(100), 3);
}

TEST(k_policy, a_batched_step_weighs_extra_rows_against_the_whole_step) {
  // The measured shape of a 2-core CPU (1..9 rows), whose 16-row step costs ~5 one-row steps.
  k_policy_config c;
  c.verify_cost = {1.0, 1.09, 1.19, 1.39, 1.6, 1.8, 2.07, 2.4, 2.8};
  const k_policy p(c);
  EXPECT_DOUBLE_EQ(p.step_cost(1), 1.0);
  EXPECT_DOUBLE_EQ(p.step_cost(9), 2.8);
  EXPECT_NEAR(p.step_cost(16), 2.8 + 7 * (2.8 - 1.6) / 4, 1e-12) << "the upper half's slope beyond the measurement";
  const std::vector<float> sure{0.9f, 0.9f, 0.92f, 0.92f, 0.92f, 0.92f, 0.92f, 0.92f};
  EXPECT_EQ(p.best_prefix(sure, 1), p.best_prefix(sure)) << "one row: as before";
  const int at4 = p.best_prefix(sure, 4);
  EXPECT_GE(at4, 1);
  EXPECT_LT(at4, p.best_prefix(sure, 1)) << "a 4-row step: a shorter draft pays";
  EXPECT_EQ(p.best_prefix(sure, 16), 0) << "16 rows, compute-bound: an extra row costs what a whole sequence's does";
  EXPECT_EQ(p.best_k(0.9, 8, 16), 0);
  EXPECT_GE(p.best_k(0.9, 8, 2), 1);
  EXPECT_LE(p.best_k(0.9, 8, 2), p.best_k(0.9, 8, 1));
  // Where rows are nearly free (a GPU's memory-bound step) a large batch still drafts.
  k_policy_config flat;
  flat.verify_cost = {1.0, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.08};
  EXPECT_GE(k_policy(flat).best_prefix(sure, 16), 5);
}

TEST(k_policy, the_proposals_of_a_step_are_cut_together) {
  // Rows 1-4 cost one step, then each row one more (a step that turns compute-bound at 4 rows).
  k_policy_config c;
  c.verify_cost = {1.0, 1.0, 1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0};
  const k_policy p(c);
  const std::vector<float> a{0.9f, 0.9f}, b{0.9f, 0.9f};
  // Alone each sequence of a 2-sequence step would verify both tokens (2 + 1.71 tokens for 4 rows
  // at the price of 2); both doing so make 6 rows at 3x the price. Together: one token each.
  EXPECT_EQ(p.best_prefix(a, 2), 2);
  const std::vector<std::span<const float>> both{a, b};
  EXPECT_EQ(p.best_prefixes(both, 2), (std::vector<int>{1, 1}));
  // The likeliest tokens go first, whichever proposal they are in.
  const std::vector<float> sure{0.95f, 0.95f}, weak{0.3f, 0.9f};
  const std::vector<std::span<const float>> mixed{weak, sure};
  EXPECT_EQ(p.best_prefixes(mixed, 2), (std::vector<int>{0, 2}));
  // One proposal: best_prefix's answer, for every shape of cost curve.
  c.verify_cost = {1.0, 1.07, 1.19, 1.34, 1.46, 1.63, 1.87, 2.13, 2.49};
  const k_policy q(c);
  const std::vector<float> long_sure{0.9f, 0.9f, 0.92f, 0.92f, 0.92f, 0.92f, 0.92f, 0.92f};
  for (int rows : {1, 2, 4, 16}) {
    const std::vector<std::span<const float>> one{long_sure};
    EXPECT_EQ(q.best_prefixes(one, rows), std::vector<int>{q.best_prefix(long_sure, rows)}) << rows << " rows";
  }
  // A full, compute-bound batch verifies nothing; free rows verify everything.
  const std::vector<std::span<const float>> four{long_sure, long_sure, long_sure, long_sure};
  EXPECT_EQ(q.best_prefixes(four, 16), (std::vector<int>{0, 0, 0, 0}));
  k_policy_config flat;
  flat.verify_cost.assign(9, 1.0);
  const auto all = k_policy(flat).best_prefixes(four, 4);
  EXPECT_EQ(all, (std::vector<int>{8, 8, 8, 8})) << "rows past the measured 9 extend the flat curve";
  // Without a cost measurement: each proposal's own threshold rule.
  const std::vector<float> t{0.9f, 0.6f, 0.3f};
  const std::vector<std::span<const float>> two{t, t};
  EXPECT_EQ(k_policy(k_policy_config{}).best_prefixes(two, 2), (std::vector<int>{2, 2}));
  EXPECT_TRUE(q.best_prefixes({}, 3).empty());
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
  // The probe fails: the next one waits twice as long, then four times (up to max_reprobe_wait).
  p.observe(t, 1, 0);
  EXPECT_EQ(t.k, 0);
  for (int i = 0; i < c.reprobe_every; ++i) p.observe(t, 0, 0);
  EXPECT_EQ(t.k, 0) << "probed again after only reprobe_every steps";
  for (int i = 0; i < c.reprobe_every; ++i) p.observe(t, 0, 0);
  EXPECT_EQ(t.k, 1);
  p.observe(t, 1, 0);
  for (int i = 0; i < 4 * c.reprobe_every - 1; ++i) p.observe(t, 0, 0);
  EXPECT_EQ(t.k, 0);
  p.observe(t, 0, 0);
  EXPECT_EQ(t.k, 1);
  // A probe that pays resets the wait.
  p.observe(t, 1, 1);
  EXPECT_GT(t.k, 0);
  EXPECT_EQ(t.reprobe_wait, 0);
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
