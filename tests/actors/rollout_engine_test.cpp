// The staged rollout end to end: real CAF actors, a tiny model, [rollout] limits in the engine.
// A healthy stage advances; a draft that errors on the stage that adds speculation trips the
// breaker back to quantization only, after which requests are not drafted at all; outputs stay
// those of plain greedy decoding throughout (speculation is lossless, a failing draft falls back).
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <optional>
#include <chrono>
#include <thread>

#include "actors/engine.hpp"
#include "runtime/config/config.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/spec/drafts/ngram_drafter.hpp"
#include "runtime/step/generator.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/sampling_presets.hpp"
#include "tests/support/test_models.hpp"

namespace fw::actors {
namespace {

using ::fw::test::greedy;
using namespace std::chrono_literals;

/// The n-gram draft, counting proposals; with `fail` set every proposal errors (a broken draft).
class counting_drafter : public drafter {
 public:
  std::atomic<bool> fail{false};
  std::atomic<uint64_t> proposals{0};
  std::atomic<int> max_k{0};  ///< the longest proposal asked for since the last reset

  std::string name() const override { return "counting-ngram"; }
  bool scores_proposals() const override { return inner_.scores_proposals(); }
  expected<void> begin(uint64_t seq, std::span<const int32_t> prompt, const sampling_params& p) override {
    return inner_.begin(seq, prompt, p);
  }
  expected<draft_proposal> propose(uint64_t seq, std::span<const int32_t> history, int k) override {
    ++proposals;
    for (int m = max_k.load(); k > m && !max_k.compare_exchange_weak(m, k);) {
    }
    if (fail) return make_error(errc::internal, "injected draft failure");
    return inner_.propose(seq, history, k);
  }
  void accept(uint64_t seq, std::span<const int32_t> history) override { inner_.accept(seq, history); }
  void end(uint64_t seq) override { inner_.end(seq); }

 private:
  ngram_drafter inner_{1};
};

class rollout_engine_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tiny_model_spec spec;
    spec.weight_type = ggml_type::q8_0;
    spec.seed = 23;
    model_ = test::load_tiny(spec, "rollout_q8_0");
  }
  static void TearDownTestSuite() { model_.reset(); }

  /// An engine on the tiny model with `draft`; `r` set: the staged rollout; `tweak` adjusts the limits.
  std::unique_ptr<engine> start(std::optional<rollout_limits> r, drafter* draft,
                                const std::function<void(engine_limits&)>& tweak = {}) {
    engine_limits lim;
    // The drills are the only telemetry: a host with CPU sensors must not add its own readings
    // every second (they would re-judge the devices between the drill's samples).
    lim.telemetry_poll_s = 0;
    lim.n_ctx = 256;
    lim.max_batch = 8;
    lim.prefill_chunk = 16;
    lim.draft = draft;
    lim.rollout = r;
    if (tweak) tweak(lim);
    return test::start_engine(model_, test::tiny_device(*model_), lim);
  }

  /// Repetitive prompts, so that the n-gram draft has something to propose.
  static std::vector<int32_t> prompt_of(size_t i) {
    std::vector<int32_t> p;
    for (size_t j = 0; j < 20 + i % 7; ++j) p.push_back(static_cast<int32_t>(3 + (j % (3 + i % 5)) * 11));
    return p;
  }

  /// Runs requests first..first+n one after another (each outcome is recorded before the next
  /// starts) and checks each against plain greedy decoding.
  void run_checked(engine& e, size_t first, size_t n) {
    cpu_backend_options o;
    o.threads = 1;
    o.kv_tokens = 256;
    cpu_backend ref_be(model_->config(), model_->weights(), o);
    generator ref(*model_, ref_be, generator_options{256, 512, false});
    for (size_t i = first; i < first + n; ++i) {
      auto r = e.run(prompt_of(i), greedy(24));
      ASSERT_TRUE(r.ok()) << r.final.error;
      auto want = ref.run(prompt_of(i), greedy(24));
      ASSERT_TRUE(want);
      EXPECT_EQ(r.tokens, want->tokens) << "request " << i;
    }
  }

  static inline std::shared_ptr<const model> model_;
};

TEST_F(rollout_engine_test, a_healthy_stage_advances_and_the_next_stage_drafts) {
  rollout_limits r;
  r.start_stage = 1;
  r.shares = {1.0, 1.0, 1.0, 1.0};
  r.min_requests = 3;
  r.advance_after = 4;
  r.cooldown_s = 0;
  r.p99_ratio = 100;  // latency is not what this test judges (2 shared cores)
  counting_drafter draft;
  auto e = start(r, &draft);
  ASSERT_TRUE(e);
  run_checked(*e, 0, 6);
  EXPECT_EQ(draft.proposals.load(), 0u) << "stage 1 (quantization only) must not speculate";
  auto s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->rollout_stage, 2u) << "stage 1 healthy for 4 requests: stage 2";
  ASSERT_EQ(s->rollout_decisions, 1u);
  EXPECT_NE(s->rollout_log.back().find("1 -> 2: stage 1 healthy for 4 requests"), std::string::npos)
      << s->rollout_log.back();
  run_checked(*e, 6, 3);
  EXPECT_GT(draft.proposals.load(), 0u) << "stage 2 adds speculation";
  s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->rollout_requests.size(), 4u);
  EXPECT_GT(s->rollout_requests[1], 0u);
  EXPECT_GT(s->rollout_p99_ms[0], 0.0);
  const std::string m = e->render_metrics();
  EXPECT_NE(m.find("flywheel:rollout_stage{model_name=\"flywheel tiny llama\"} 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("flywheel:rollout_decisions_total{model_name=\"flywheel tiny llama\"} 1\n"), std::string::npos);
  EXPECT_NE(m.find("flywheel:rollout_stage_requests{model_name=\"flywheel tiny llama\",stage=\"2\"} 3\n"),
            std::string::npos);
}

TEST_F(rollout_engine_test, a_failing_draft_trips_the_breaker_back_to_stage_one) {
  rollout_limits r;
  r.start_stage = 2;
  r.shares = {1.0, 1.0, 1.0, 1.0};  // every request on the stage rolling out
  r.min_requests = 4;
  r.advance_after = 1000;
  r.cooldown_s = 3600;
  counting_drafter draft;
  draft.fail = true;
  auto e = start(r, &draft);
  ASSERT_TRUE(e);
  run_checked(*e, 0, 4);  // the failing draft falls back to plain decoding: same tokens
  auto s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->rollout_stage, 1u);
  ASSERT_EQ(s->rollout_decisions, 1u);
  EXPECT_NE(s->rollout_log.back().find("2 -> 1: breaker: stage 2 draft failures 100.0% > 15.0%"), std::string::npos)
      << s->rollout_log.back();
  EXPECT_EQ(s->completed, 4u);
  const uint64_t before = draft.proposals.load();
  EXPECT_GT(before, 0u);
  run_checked(*e, 4, 3);
  EXPECT_EQ(draft.proposals.load(), before) << "after the trip no request is drafted";
  s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->rollout_stage, 1u) << "the cool-down holds it at stage 1";
}

TEST_F(rollout_engine_test, without_rollout_every_request_gets_every_lever) {
  counting_drafter draft;
  auto e = start(std::nullopt, &draft);
  ASSERT_TRUE(e);
  run_checked(*e, 0, 2);
  EXPECT_GT(draft.proposals.load(), 0u);
  auto s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->rollout_stage, 0u);
  EXPECT_EQ(e->render_metrics().find("flywheel:rollout_stage"), std::string::npos);
}

TEST_F(rollout_engine_test, a_degraded_link_caps_the_draft_length_and_recovery_lifts_the_cap) {
  counting_drafter draft;
  auto e = start(std::nullopt, &draft, [](engine_limits& lim) {
    lim.degradation.k_cap = 2;
    lim.degradation.recover_samples = 1;
    // A fixed k above the cap: with k = auto the speculation gate may rightly hold drafting off
    // on this tiny model, whose forward costs about what the draft actor's round trip does.
    k_policy_config c;
    c.adaptive = false;
    c.fixed_k = 4;
    lim.policy = k_policy(c);
  });
  ASSERT_TRUE(e);
  run_checked(*e, 0, 3);
  EXPECT_GT(draft.max_k.load(), 2) << "healthy: the k policy asks for more than the cap";
  auto state_is = [&](const std::string& want) {
    for (int i = 0; i < 3000; ++i) {
      if (auto h = e->health(); h && h->degradation == want) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  };
  ASSERT_TRUE(e->drill({{0, "prefill", "temperature_c", 85}}, 1));
  ASSERT_TRUE(state_is("link-degraded"));
  draft.max_k = 0;
  run_checked(*e, 3, 3);  // still lossless
  EXPECT_GT(draft.proposals.load(), 0u);
  EXPECT_LE(draft.max_k.load(), 2) << "link-degraded: k capped at [supervisor] degraded_k_cap";
  ASSERT_TRUE(e->drill({{0, "prefill", "temperature_c", 60}}, 1));
  ASSERT_TRUE(state_is("healthy"));
  draft.max_k = 0;
  run_checked(*e, 6, 3);
  EXPECT_GT(draft.max_k.load(), 2) << "healthy again: the cap is lifted";
}

TEST(rollout_config, the_rollout_section_reaches_the_engine_limits) {
  tiny_model_spec spec;
  spec.seed = 31;
  ASSERT_TRUE(test::load_tiny(spec, "rollout_config"));
  const std::string path = test::temp_dir() + "/rollout_config.gguf";
  auto parts_for = [&](const std::string& rollout) {
    auto cfg = config::from_string("[model]\npath = \"" + path + "\"\nctx_size = 128\n[compute]\nthreads = 1\n"
                                   "[kv_cache]\nblock_tokens = 16\npool_tokens = 1024\n[rollout]\n" + rollout,
                                   "rollout.toml");
    EXPECT_TRUE(cfg) << (cfg ? "" : cfg.err().message);
    return build_runtime(*cfg);
  };
  auto off = parts_for("enabled = false\n");
  ASSERT_TRUE(off) << off.err().what();
  EXPECT_FALSE(off->limits().rollout.has_value());
  auto on = parts_for("enabled = true\nshares_pct = [20, 60, 100]\nstart_stage = 3\nmin_requests = 7\n"
                      "advance_after = 9\ncooldown_s = 5\np99_ratio = 1.5\nmax_error_rate = 0.01\nmax_draft_failure = 0.2\n");
  ASSERT_TRUE(on) << on.err().what();
  const auto r = on->limits().rollout;
  ASSERT_TRUE(r.has_value());
  EXPECT_DOUBLE_EQ(r->shares[0], 1.0);
  EXPECT_DOUBLE_EQ(r->shares[1], 0.2);
  EXPECT_DOUBLE_EQ(r->shares[2], 0.6);
  EXPECT_DOUBLE_EQ(r->shares[3], 1.0);
  EXPECT_EQ(r->start_stage, 3u);
  EXPECT_EQ(r->min_requests, 7u);
  EXPECT_EQ(r->advance_after, 9u);
  EXPECT_DOUBLE_EQ(r->cooldown_s, 5);
  EXPECT_DOUBLE_EQ(r->p99_ratio, 1.5);
  EXPECT_DOUBLE_EQ(r->max_error_rate, 0.01);
  EXPECT_DOUBLE_EQ(r->max_draft_failure, 0.2);
}

}  // namespace
}  // namespace fw::actors
