// The actor runtime on real CAF actors and a tiny model: concurrent requests equal sequential
// generation, cancellation, pool exhaustion, worker crashes, client loss, shutdown. Every test
// also checks that no KV block leaks.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include "actors/engine.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/step/generator.hpp"
#include "runtime/spec/drafts/model_drafter.hpp"
#include "runtime/spec/drafts/ngram_drafter.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/test_models.hpp"
#include "tests/support/sampling_presets.hpp"

namespace fw::actors {
namespace {

using ::fw::test::greedy;

using namespace std::chrono_literals;

class engine_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tiny_model_spec spec;
    spec.weight_type = ggml_type::q8_0;
    spec.seed = 21;
    model_ = test::load_tiny(spec, "engine_q8_0");
  }
  static void TearDownTestSuite() { model_.reset(); }

  std::unique_ptr<engine> start(uint32_t kv_tokens = 4096, uint32_t max_batch = 16, uint32_t n_ctx = 256,
                                drafter* draft = nullptr, std::shared_ptr<const engine_faults> faults = nullptr) {
    engine_limits lim;
    lim.n_ctx = n_ctx;
    lim.max_batch = max_batch;
    lim.prefill_chunk = 16;
    lim.draft = draft;
    lim.restart = restart_;
    if (tweak_) tweak_(lim);
    return test::start_engine(model_, test::tiny_device(*model_, kv_tokens), lim, engine_options{std::move(faults)});
  }

  /// The supervisor's restart policy for the engines a test starts: quick restarts, no escalation.
  restart_limits restart_{0.001, 0.02, 1000, 60, 30};
  /// Adjusts the limits of the engines a test starts.
  std::function<void(engine_limits&)> tweak_;

  /// A seeded schedule of faults (a failure reproduces): fire() is true on its `first`-th call,
  /// then each min_gap..max_gap calls later, at most `max` times. Thread-safe (the workers ask).
  class fault_schedule {
   public:
    fault_schedule(uint32_t seed, int first, int max, int min_gap, int max_gap)
        : rng_(seed), until_next_(first), max_(max), min_gap_(min_gap), max_gap_(max_gap) {}
    bool fire() {
      std::lock_guard lock(mu_);
      ++calls_;
      if (fired_ >= max_ || --until_next_ > 0) return false;
      ++fired_;
      until_next_ = min_gap_ + static_cast<int>(rng_() % static_cast<uint32_t>(max_gap_ - min_gap_ + 1));
      return true;
    }
    int fired() {
      std::lock_guard lock(mu_);
      return fired_;
    }
    int calls() {
      std::lock_guard lock(mu_);
      return calls_;
    }

   private:
    std::mutex mu_;
    std::mt19937 rng_;
    int until_next_, max_, min_gap_, max_gap_;
    int fired_ = 0, calls_ = 0;
  };

  /// Repetitive prompts (20 + i tokens), so the n-gram draft proposes often.
  static std::vector<int32_t> repetitive_prompt(size_t i) {
    std::vector<int32_t> p;
    for (size_t j = 0; j < 20 + i; ++j) p.push_back(static_cast<int32_t>(3 + (j % (3 + i)) * 11));
    return p;
  }
  /// The engines a test starts from now on draft a fixed k every step. With k = auto the
  /// speculation gate could rightly turn drafting off on this tiny model, whose forward costs
  /// less than an ask's round trip to the draft actor.
  void use_fixed_k(int k) {
    tweak_ = [k](engine_limits& l) {
      k_policy_config c;
      c.adaptive = false;
      c.fixed_k = k;
      l.policy = k_policy(c);
    };
  }

  static std::vector<int32_t> prompt_of(size_t i) {
    std::vector<int32_t> p;
    for (size_t j = 0; j < 3 + i * 5; ++j) p.push_back(static_cast<int32_t>(3 + (i * 31 + j * 7) % 250));
    return p;
  }
  static void expect_no_leak(engine& e) {
    // Finished sequences are released by the decode worker before their final event; cancelled
    // and failed ones a few messages later. A bounded wait for that state (30 s), not a sleep.
    for (int i = 0; i < 3000; ++i) {
      auto s = e.stats();
      ASSERT_TRUE(s);
      if (s->kv_used_blocks == 0 && s->decoding == 0 && s->prefilling == 0 && s->waiting == 0) return;
      std::this_thread::sleep_for(10ms);
    }
    auto s = e.stats();
    FAIL() << "KV blocks still in use: " << s->kv_used_blocks;
  }

  /// Submits a request and collects its stream (tokens, text, then the final event);
  /// `on_first_token` runs when its first token arrives. Returns its id and the whole request.
  static std::pair<uint64_t, std::future<completed_request>> submit_collect(engine& e, std::vector<int32_t> prompt,
                                                                            const sampling_params& p,
                                                                            std::function<void()> on_first_token = {}) {
    struct state {
      std::mutex mu;
      completed_request got;
      std::promise<completed_request> done;
    };
    auto st = std::make_shared<state>();
    auto fut = st->done.get_future();
    const uint64_t id = e.submit(std::move(prompt), p, [st, on_first_token](const stream_event& ev) {
      std::lock_guard lock(st->mu);
      if (ev.kind == static_cast<uint8_t>(stream_kind::token)) {
        if (st->got.tokens.empty() && on_first_token) on_first_token();
        st->got.tokens.insert(st->got.tokens.end(), ev.tokens.begin(), ev.tokens.end());
        st->got.text += ev.text;
      } else {
        st->got.final = ev;
        st->done.set_value(st->got);
      }
    });
    return {id, std::move(fut)};
  }

  /// Plain sequential generation on a backend of its own: what the runtime must reproduce.
  struct sequential_reference {
    static cpu_backend_options options() {
      cpu_backend_options o;
      o.threads = 1;
      o.kv_tokens = 256;
      return o;
    }
    cpu_backend be{model_->config(), model_->weights(), options()};
    generator gen{*model_, be, generator_options{256, 512, false}};
  };

  static inline std::shared_ptr<const model> model_;
};

TEST_F(engine_test, sixteen_concurrent_requests_equal_sequential_generation) {
  // Sequential reference on a separate backend.
  sequential_reference seq;
  generator& ref = seq.gen;
  std::vector<std::vector<int32_t>> expected(16);
  for (size_t i = 0; i < 16; ++i) {
    auto r = ref.run(prompt_of(i), greedy(8 + static_cast<int>(i) * 3));
    ASSERT_TRUE(r);
    expected[i] = r->tokens;
  }

  auto e = start();
  ASSERT_TRUE(e);
  std::vector<std::future<completed_request>> done;
  for (size_t i = 0; i < 16; ++i) done.push_back(submit_collect(*e, prompt_of(i), greedy(8 + static_cast<int>(i) * 3)).second);
  for (size_t i = 0; i < 16; ++i) {
    auto& f = done[i];
    ASSERT_EQ(f.wait_for(60s), std::future_status::ready) << "request " << i << " hangs";
    auto r = f.get();
    EXPECT_TRUE(r.ok()) << r.final.error;
    EXPECT_EQ(r.tokens, expected[i]) << "request " << i;
    EXPECT_EQ(r.final.completion_tokens, expected[i].size());
    EXPECT_EQ(r.final.prompt_tokens, prompt_of(i).size());
    EXPECT_EQ(r.final.finish_reason, "length");
    EXPECT_GT(r.final.ttft_ms, 0.0);
  }
  expect_no_leak(*e);
  auto s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->completed, 16u);
}

TEST_F(engine_test, speculative_decode_actor_is_lossless_with_concurrent_requests) {
  sequential_reference seq;
  generator& ref = seq.gen;
  // Repetitive prompts so the n-gram draft proposes often.
  auto prompt = [](size_t i) { return repetitive_prompt(i); };
  ngram_drafter draft(1);
  auto e = start(4096, 16, 256, &draft);
  std::vector<std::future<completed_request>> futs;
  for (size_t i = 0; i < 8; ++i)
    futs.push_back(std::async(std::launch::async, [&, i] { return e->run(prompt(i), greedy(40)); }));
  for (size_t i = 0; i < 8; ++i) {
    ASSERT_EQ(futs[i].wait_for(60s), std::future_status::ready);
    auto r = futs[i].get();
    ASSERT_TRUE(r.ok()) << r.final.error;
    auto want = ref.run(prompt(i), greedy(40));
    ASSERT_TRUE(want);
    EXPECT_EQ(r.tokens, want->tokens) << "request " << i;
  }
  expect_no_leak(*e);
}

TEST_F(engine_test, draft_actor_killed_under_speculating_requests_loses_nothing_and_drafting_resumes) {
  // Waves of eight greedy requests speculate through the draft actor, which dies at 5
  // pseudo-random asks (a fixed seed). Each death makes that step plain and the sequences decode
  // plainly until the supervisor's replacement begins them again: every request ends with the
  // tokens of plain decoding, none is re-admitted (the decode worker never stopped), and a wave
  // after the last death is drafted for again.
  sequential_reference seq;
  auto prompt = [](size_t i) { return repetitive_prompt(i); };
  std::vector<std::vector<int32_t>> want;
  for (size_t i = 0; i < 8; ++i) {
    auto r = seq.gen.run(prompt(i), greedy(120));
    ASSERT_TRUE(r);
    want.push_back(r->tokens);
  }
  constexpr int deaths = 5;
  // The first death at the 2nd ask, the next each 2..6 asks later.
  auto k = std::make_shared<fault_schedule>(20261205, 2, deaths, 2, 6);
  auto faults = std::make_shared<engine_faults>();
  faults->crash_draft = [k] { return k->fire(); };
  auto kills = [k] { return k->fired(); };
  auto asks = [k] { return k->calls(); };
  ngram_drafter draft(1);
  use_fixed_k(4);
  auto e = start(4096, 16, 256, &draft, faults);
  auto wave = [&] {
    std::vector<std::future<completed_request>> futs;
    for (size_t i = 0; i < 8; ++i)
      futs.push_back(std::async(std::launch::async, [&, i] { return e->run(prompt(i), greedy(120)); }));
    for (size_t i = 0; i < 8; ++i) {
      ASSERT_EQ(futs[i].wait_for(60s), std::future_status::ready) << "request " << i << " hangs";
      auto r = futs[i].get();
      ASSERT_TRUE(r.ok()) << r.final.error;
      EXPECT_EQ(r.tokens, want[i]) << "request " << i;
    }
  };
  for (int w = 0; w < 30 && kills() < deaths; ++w) wave();
  ASSERT_EQ(kills(), deaths) << "the draft actor was not asked often enough to die " << deaths << " times";
  // The supervisor has restarted it after every death (its down messages may trail the replies).
  for (int i = 0; i < 500; ++i) {
    auto h = e->health();
    ASSERT_TRUE(h);
    bool done = false;
    for (size_t j = 0; j < h->names.size(); ++j)
      if (h->names[j] == "draft") done = h->crashes[j] == static_cast<uint64_t>(deaths) && h->states[j] == "running";
    if (done) break;
    ASSERT_LT(i, 499) << "health never showed the draft actor restarted after " << deaths << " deaths";
    std::this_thread::sleep_for(10ms);
  }
  const int before = asks();
  wave();
  EXPECT_GT(asks(), before) << "the replacement draft actor was never asked";
  auto s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->failed, 0u);
  EXPECT_EQ(s->resumed, 0u);
  expect_no_leak(*e);
}

TEST_F(engine_test, a_speculating_decode_worker_killed_five_times_loses_nothing) {
  // The decode worker (the verifier) dies mid-generation 5 times while its sequences speculate
  // through the draft actor (a model draft: the target itself on a backend of its own). Each
  // replacement tells the draft actor to forget what the dead one began, and begins the
  // re-admitted sequences again: every request ends with plain decoding's tokens, and once all
  // have ended the draft model's KV pool is empty again (a dead worker never ends its sequences
  // by message: the reset, or their beginning again under the same id, frees their draft KV).
  sequential_reference seq;
  auto prompt = [](size_t i) { return repetitive_prompt(i); };
  // The first death at the 4th step, the next each 3..10 steps later.
  auto k = std::make_shared<fault_schedule>(20261206, 4, 5, 3, 10);
  auto faults = std::make_shared<engine_faults>();
  faults->before_decode_step = [k] { return k->fire(); };
  use_fixed_k(4);
  auto draft = model_drafter::create("model", model_, *model_, test::tiny_device(*model_, 4096));
  ASSERT_TRUE(draft) << draft.err().what();
  auto e = start(4096, 16, 256, draft->get(), faults);
  std::vector<std::vector<int32_t>> want;
  for (size_t i = 0; i < 8; ++i) {
    auto r = seq.gen.run(prompt(i), greedy(120));
    ASSERT_TRUE(r);
    want.push_back(r->tokens);
  }
  auto kills = [k] { return k->fired(); };
  // Waves of eight requests until the worker has died 5 times.
  for (int w = 0; w < 20 && kills() < 5; ++w) {
    std::vector<std::future<completed_request>> futs;
    for (size_t i = 0; i < 8; ++i)
      futs.push_back(std::async(std::launch::async, [&, i] { return e->run(prompt(i), greedy(120)); }));
    for (size_t i = 0; i < 8; ++i) {
      ASSERT_EQ(futs[i].wait_for(60s), std::future_status::ready) << "request " << i << " hangs";
      auto r = futs[i].get();
      ASSERT_TRUE(r.ok()) << r.final.error;
      EXPECT_EQ(r.tokens, want[i]) << "request " << i;
    }
  }
  EXPECT_EQ(kills(), 5);
  auto s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->failed, 0u);
  EXPECT_GE(s->resumed, 5u);
  expect_no_leak(*e);
  // The last ends reach the draft actor after the last replies.
  kv_block_pool& draft_pool = (*draft)->device().kv_pool();
  for (int i = 0; i < 200 && draft_pool.used_blocks() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(draft_pool.used_blocks(), 0u) << "the draft model's KV leaked";
  e->shutdown();
}

TEST_F(engine_test, speculative_sampling_at_temperature_runs_end_to_end_and_is_reproducible_by_seed) {
  // Rejection sampling in the decode worker (its distribution is tested in speculative_test):
  // sampled requests with an n-gram draft at a fixed k finish, drafts are verified and some
  // accepted, and a request's seed alone decides its output, whatever else shares its batch.
  auto prompt = [](size_t i) {
    std::vector<int32_t> p;
    for (size_t j = 0; j < 24 + i; ++j) p.push_back(static_cast<int32_t>(3 + (j % (3 + i)) * 11));
    return p;
  };
  auto params = [](size_t i) {
    sampling_params p = test::unfiltered(0.1f, 30);  // sharp enough on this random model that drafts can be right
    p.seed = 100 + i;
    return p;
  };
  ngram_drafter draft(1);
  k_policy_config kc;
  kc.adaptive = false;
  kc.fixed_k = 3;
  cpu_backend_options o;
  o.threads = 2;
  o.kv_tokens = 4096;
  engine_limits lim;
  lim.n_ctx = 256;
  lim.prefill_chunk = 16;
  lim.draft = &draft;
  lim.policy = k_policy(kc);
  auto e = engine::start(model_, std::make_unique<cpu_backend>(model_->config(), model_->weights(), o), lim);
  ASSERT_TRUE(e);
  std::vector<std::future<completed_request>> futs;
  for (size_t i = 0; i < 6; ++i)
    futs.push_back(std::async(std::launch::async, [&, i] { return (*e)->run(prompt(i), params(i)); }));
  std::vector<std::vector<int32_t>> together;
  for (auto& f : futs) {
    ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
    auto r = f.get();
    ASSERT_TRUE(r.ok()) << r.final.error;
    EXPECT_EQ(r.tokens.size(), 30u);
    together.push_back(r.tokens);
  }
  const std::string m = (*e)->render_metrics();
  const auto at = m.find("flywheel:spec_decode_num_accepted_tokens_total{");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GT(std::stod(m.substr(m.find("} ", at) + 2)), 0.0) << "some draft tokens are accepted:\n" << m.substr(at, 200);
  for (size_t i : {0, 3}) {  // alone, with nothing else in the batch
    auto r = (*e)->run(prompt(i), params(i));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.tokens, together[i]) << "request " << i;
  }
  expect_no_leak(**e);
}

TEST_F(engine_test, the_decode_time_predictor_holds_admission_at_its_tpot_target) {
  sequential_reference seq;
  generator& ref = seq.gen;
  for (double target : {0.0, 1e-9}) {  // off; a target no step meets: one sequence at a time
    tweak_ = [target](engine_limits& lim) { lim.admission_tpot_s = target; };
    auto e = start();
    ASSERT_TRUE(e);
    ASSERT_TRUE(e->run(prompt_of(9), greedy(16)).ok());  // steps of growing context: the model is fitted
    auto s = e->stats();
    ASSERT_TRUE(s);
    EXPECT_GE(s->predictor_steps, 15u);
    EXPECT_GT(s->predictor_a + s->predictor_b, 0.0);
    std::vector<std::future<completed_request>> done;
    for (size_t i = 0; i < 8; ++i) done.push_back(submit_collect(*e, prompt_of(i), greedy(12)).second);
    for (auto& f : done) ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
    for (size_t i = 0; i < 8; ++i) {
      auto r = done[i].get();
      ASSERT_TRUE(r.ok()) << r.final.error;
      auto want = ref.run(prompt_of(i), greedy(12));
      ASSERT_TRUE(want);
      EXPECT_EQ(r.tokens, want->tokens) << "request " << i;
    }
    s = e->stats();
    ASSERT_TRUE(s);
    const uint64_t most_running = s->peak_running;
    if (target > 0) {
      EXPECT_GT(s->admission_holds, 0u);
      EXPECT_LE(most_running, 1u) << "an idle device takes one, nothing joins a step over the target";
    } else {
      EXPECT_EQ(s->admission_holds, 0u);
      EXPECT_GT(most_running, 1u) << "off: the batch fills";
    }
    expect_no_leak(*e);
  }
}

TEST_F(engine_test, cancel_frees_the_blocks_and_ends_the_stream) {
  auto e = start();
  std::promise<stream_event> fin;
  std::atomic<int> tokens{0};
  std::promise<void> first;
  const uint64_t id = e->submit(prompt_of(2), greedy(200), [&](const stream_event& ev) {
    if (ev.kind == static_cast<uint8_t>(stream_kind::token)) {
      if (tokens.fetch_add(1) == 0) first.set_value();
    } else {
      fin.set_value(ev);
    }
  });
  ASSERT_EQ(first.get_future().wait_for(30s), std::future_status::ready);
  e->cancel(id);
  auto f = fin.get_future();
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  const auto ev = f.get();
  EXPECT_EQ(ev.kind, static_cast<uint8_t>(stream_kind::error));
  EXPECT_EQ(ev.finish_reason, "cancelled");
  EXPECT_LT(tokens.load(), 200);
  expect_no_leak(*e);
}

TEST_F(engine_test, exhausted_pool_makes_requests_wait_then_all_complete) {
  // 64 tokens of KV (4 blocks); each request needs 2 blocks, so at most 2 run at once and the
  // others must wait for blocks (not fail).
  auto e = start(64, 16, 64);
  std::vector<std::future<completed_request>> futs;
  for (size_t i = 0; i < 6; ++i)
    futs.push_back(std::async(std::launch::async, [&, i] { return e->run(prompt_of(i % 2), greedy(20)); }));
  for (auto& f : futs) {
    ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
    auto r = f.get();
    EXPECT_TRUE(r.ok()) << r.final.error;
    EXPECT_EQ(r.tokens.size(), 20u);
  }
  auto s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_GE(s->peak_waiting, 1u) << "requests should have queued for KV blocks";
  EXPECT_EQ(s->completed, 6u);
  expect_no_leak(*e);
}

TEST_F(engine_test, request_larger_than_the_pool_fails_clearly) {
  auto e = start(64, 16, 256);
  auto r = e->run(prompt_of(3), greedy(100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.final.finish_reason, "out of memory");
  EXPECT_NE(r.final.error.find("KV blocks"), std::string::npos) << r.final.error;
  // The runtime keeps serving.
  EXPECT_TRUE(e->run(prompt_of(0), greedy(5)).ok());
}

TEST_F(engine_test, context_overflow_and_bad_input_fail_clearly) {
  auto e = start(4096, 16, 64);
  auto r = e->run(prompt_of(5), greedy(60));
  EXPECT_EQ(r.final.finish_reason, "context overflow");
  EXPECT_NE(r.final.error.find("context window of 64"), std::string::npos) << r.final.error;
  auto r2 = e->run({}, greedy(5));
  EXPECT_EQ(r2.final.finish_reason, "invalid argument");
  auto r3 = e->run({1, 99999}, greedy(5));
  EXPECT_EQ(r3.final.finish_reason, "invalid argument");
  sampling_params bad = greedy(5);
  bad.top_p = -1;
  auto r4 = e->run(prompt_of(0), bad);
  EXPECT_EQ(r4.final.finish_reason, "invalid argument");
  expect_no_leak(*e);
}

TEST_F(engine_test, decode_worker_crash_loses_no_request) {
  // The decode worker crashes at its first step after every request has streamed a token, so
  // all four are decoding (150 tokens each) when it dies. The scheduler re-admits each from its
  // prompt and the tokens it had streamed: every request completes with exactly the tokens and
  // text of an undisturbed run, none repeated, none missing.
  std::vector<completed_request> ref;
  {
    auto clean = start();
    for (size_t i = 0; i < 4; ++i) ref.push_back(clean->run(prompt_of(i), greedy(150)));
  }
  auto streaming = std::make_shared<std::atomic<int>>(0);
  auto faults = std::make_shared<engine_faults>();
  auto armed = std::make_shared<std::atomic<bool>>(true);
  faults->before_decode_step = [streaming, armed] { return streaming->load() == 4 && armed->exchange(false); };
  auto e = start(4096, 16, 256, nullptr, faults);
  std::vector<std::future<completed_request>> done;
  for (size_t i = 0; i < 4; ++i)
    done.push_back(submit_collect(*e, prompt_of(i), greedy(150), [streaming] { streaming->fetch_add(1); }).second);
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(done[i].wait_for(60s), std::future_status::ready) << "a request hangs after the crash";
    auto r = done[i].get();
    ASSERT_TRUE(r.ok()) << r.final.error;
    EXPECT_EQ(r.tokens, ref[i].tokens) << "request " << i;
    EXPECT_EQ(r.text, ref[i].text) << "request " << i;
    EXPECT_EQ(r.final.completion_tokens, ref[i].final.completion_tokens);
  }
  EXPECT_FALSE(armed->load()) << "the fault fired";
  auto s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->worker_restarts, 1u);
  EXPECT_EQ(s->resumed, 4u);
  EXPECT_EQ(s->failed, 0u);
  auto h = e->health();
  ASSERT_TRUE(h);
  ASSERT_EQ(h->names.size(), 2u);  // prefill, decode
  EXPECT_EQ(h->names[1], "decode");
  EXPECT_EQ(h->crashes[1], 1u);
  EXPECT_EQ(h->states[1], "running");
  expect_no_leak(*e);
}

TEST_F(engine_test, decode_worker_killed_twenty_times_under_sixteen_requests_loses_nothing) {
  // 16 concurrent greedy requests; the decode worker dies at 20 pseudo-random steps (a fixed
  // seed, so a failure reproduces). Every request completes with the tokens of an undisturbed run.
  constexpr size_t n = 16;
  constexpr uint32_t max_tokens = 96;
  std::vector<completed_request> ref(n);
  {
    auto clean = start();
    std::vector<std::future<completed_request>> f;
    for (size_t i = 0; i < n; ++i) f.push_back(submit_collect(*clean, prompt_of(i), greedy(max_tokens)).second);
    for (size_t i = 0; i < n; ++i) ref[i] = f[i].get();
  }
  // The first kill at the 3rd step, the next each 1..9 steps later.
  auto k = std::make_shared<fault_schedule>(20261203, 3, 20, 1, 9);
  auto faults = std::make_shared<engine_faults>();
  faults->before_decode_step = [k] { return k->fire(); };
  auto e = start(4096, 16, 256, nullptr, faults);
  std::vector<std::future<completed_request>> done;
  for (size_t i = 0; i < n; ++i) done.push_back(submit_collect(*e, prompt_of(i), greedy(max_tokens)).second);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(done[i].wait_for(120s), std::future_status::ready) << "request " << i << " hangs";
    auto r = done[i].get();
    ASSERT_TRUE(r.ok()) << "request " << i << ": " << r.final.error;
    EXPECT_EQ(r.tokens, ref[i].tokens) << "request " << i;
    EXPECT_EQ(r.text, ref[i].text) << "request " << i;
  }
  EXPECT_EQ(k->fired(), 20) << "the worker was killed 20 times while requests ran";
  auto s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->worker_restarts, 20u);
  EXPECT_GE(s->resumed, 20u);
  EXPECT_EQ(s->failed, 0u);
  expect_no_leak(*e);
}

TEST_F(engine_test, prefill_worker_crash_retries_that_request_and_requeues_the_others) {
  // The prefill worker holds its first job until all three requests are prefilling (their jobs
  // queued behind it in its mailbox), then dies on it. The other two were innocent: they go back
  // to waiting and the replacement worker serves them; the one it died on is retried too.
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  auto first = std::make_shared<std::atomic<uint64_t>>(0);
  auto faults = std::make_shared<engine_faults>();
  faults->crash_prefill = [released, first](uint64_t id) {
    uint64_t none = 0;
    if (!first->compare_exchange_strong(none, id)) return false;
    released.wait();
    return true;
  };
  auto e = start(4096, 16, 256, nullptr, faults);
  std::vector<std::future<completed_request>> futs;
  for (size_t i = 0; i < 3; ++i)
    futs.push_back(std::async(std::launch::async, [&, i] { return e->run(prompt_of(i), greedy(5)); }));
  bool all_prefilling = false;
  for (int i = 0; i < 3000 && !all_prefilling; ++i) {  // a condition wait, bounded at 30 s
    auto s = e->stats();
    all_prefilling = s && s->prefilling == 3;
    if (!all_prefilling) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(all_prefilling);
  release->set_value();
  int failed = 0;
  for (auto& f : futs) {
    ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
    auto r = f.get();
    if (r.ok()) {
      EXPECT_EQ(r.tokens.size(), 5u);
      continue;
    }
    ++failed;
  }
  EXPECT_EQ(failed, 0) << "the request the worker died on is retried, the others requeued";
  auto s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->requeued, 3u);
  EXPECT_EQ(s->worker_restarts, 1u);
  expect_no_leak(*e);
}

TEST_F(engine_test, a_prompt_that_kills_every_prefill_worker_fails_after_its_retries) {
  // Request 2's prompt kills the prefill worker every time: it is retried request_retries (2)
  // times, then fails with a message that says so; the others complete.
  auto faults = std::make_shared<engine_faults>();
  auto attempts = std::make_shared<std::atomic<int>>(0);
  faults->crash_prefill = [attempts](uint64_t id) { return id == 2 && (attempts->fetch_add(1), true); };
  auto e = start(4096, 16, 256, nullptr, faults);
  auto a = e->run(prompt_of(0), greedy(5));
  EXPECT_TRUE(a.ok()) << a.final.error;
  auto poison = e->run(prompt_of(1), greedy(5));
  ASSERT_FALSE(poison.ok());
  EXPECT_EQ(poison.final.failure().code, errc::worker_failed);
  EXPECT_NE(poison.final.error.find("3 times"), std::string::npos) << poison.final.error;
  EXPECT_EQ(attempts->load(), 3);
  auto c = e->run(prompt_of(2), greedy(5));
  EXPECT_TRUE(c.ok()) << c.final.error;
  expect_no_leak(*e);
}

TEST_F(engine_test, a_kv_error_in_one_sequence_fails_only_that_request_of_a_full_batch) {
  // Sequential reference on a separate backend.
  sequential_reference seq;
  generator& ref = seq.gen;
  std::vector<std::vector<int32_t>> expected(16);
  for (size_t i = 0; i < 16; ++i) {
    auto r = ref.run(prompt_of(i), greedy(24));
    ASSERT_TRUE(r);
    expected[i] = r->tokens;
  }
  // Request 5's KV fails to grow at its fourth step.
  const uint64_t victim = 5;
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto faults = std::make_shared<engine_faults>();
  faults->fail_kv_reserve = [calls, victim](uint64_t id) { return id == victim && calls->fetch_add(1) == 3; };
  auto e = start(4096, 16, 256, nullptr, faults);
  std::vector<uint64_t> ids(16);
  std::vector<std::future<completed_request>> done;
  for (size_t i = 0; i < 16; ++i) {
    auto [id, f] = submit_collect(*e, prompt_of(i), greedy(24));
    ids[i] = id;
    done.push_back(std::move(f));
  }
  int ok = 0;
  for (size_t i = 0; i < 16; ++i) {
    auto& f = done[i];
    ASSERT_EQ(f.wait_for(60s), std::future_status::ready) << "request " << i << " hangs";
    auto r = f.get();
    if (ids[i] == victim) {
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.final.failure().code, errc::internal);
      EXPECT_NE(r.final.error.find("injected KV fault"), std::string::npos) << r.final.error;
      EXPECT_EQ(r.tokens.size(), 3u) << "it streamed the tokens of its first three steps";
      continue;
    }
    EXPECT_TRUE(r.ok()) << r.final.error;
    EXPECT_EQ(r.tokens, expected[i]) << "request " << i;
    ok += r.ok();
  }
  EXPECT_EQ(ok, 15);
  auto s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->worker_restarts, 0u) << "the decode worker kept serving";
  EXPECT_EQ(s->completed, 15u);
  expect_no_leak(*e);
}

TEST_F(engine_test, a_request_that_outlives_its_timeout_fails_and_its_kv_is_released) {
  // The prefill worker holds the request until the client has seen the timeout, so the request
  // expires while prefilling; the prefill's reply then releases its KV.
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  auto faults = std::make_shared<engine_faults>();
  faults->crash_prefill = [released](uint64_t) {
    released.wait();
    return false;
  };
  cpu_backend_options o;
  o.threads = 2;
  o.kv_tokens = 4096;
  auto be = std::make_unique<cpu_backend>(model_->config(), model_->weights(), o);
  engine_limits lim;
  lim.n_ctx = 256;
  lim.prefill_chunk = 16;
  lim.request_timeout_s = 0.2;
  auto e = engine::start(model_, std::move(be), lim, engine_options{faults});
  ASSERT_TRUE(e);
  std::promise<stream_event> fin;
  (*e)->submit(prompt_of(2), greedy(20), [&](const stream_event& ev) {
    if (ev.kind != static_cast<uint8_t>(stream_kind::token)) fin.set_value(ev);
  });
  auto f = fin.get_future();
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  const auto ev = f.get();
  EXPECT_EQ(ev.failure().code, errc::timed_out);
  EXPECT_NE(ev.error.find("did not finish within"), std::string::npos) << ev.error;
  release->set_value();
  expect_no_leak(**e);
  auto s = (*e)->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->failed, 1u);
  EXPECT_EQ(s->completed, 0u);
}

TEST_F(engine_test, a_client_that_goes_away_is_cancelled) {
  auto e = start();
  std::atomic<int> calls{0};
  std::promise<void> called;
  // The callback throws: its sink actor dies, as when a client disconnects.
  e->submit(prompt_of(3), greedy(200), [&](const stream_event&) {
    if (calls.fetch_add(1) == 0) called.set_value();
    throw std::runtime_error("client gone");
  });
  ASSERT_EQ(called.get_future().wait_for(30s), std::future_status::ready);
  expect_no_leak(*e);  // the cancel reached the decode worker, which freed the KV
  EXPECT_EQ(calls.load(), 1) << "the dead sink receives nothing more";
  auto s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->completed, 0u) << "the request was cancelled, not finished";
  EXPECT_NE(e->render_metrics().find("flywheel:request_failure_total{model_name=\"" + model_->config().name +
                                      "\",reason=\"cancelled\"} 1"),
            std::string::npos);
}

TEST_F(engine_test, shutdown_fails_in_flight_requests_and_returns) {
  auto e = start();
  std::atomic<int> streaming{0};
  std::promise<void> all_streaming;
  std::vector<std::future<completed_request>> done;
  for (size_t i = 0; i < 3; ++i)
    done.push_back(submit_collect(*e, prompt_of(i), greedy(200), [&] {
                     if (streaming.fetch_add(1) == 2) all_streaming.set_value();
                   }).second);
  ASSERT_EQ(all_streaming.get_future().wait_for(30s), std::future_status::ready);
  e->shutdown();
  for (auto& f : done) {
    ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
    auto r = f.get();
    EXPECT_FALSE(r.ok()) << "200 tokens cannot be done yet";
    EXPECT_EQ(r.final.finish_reason, "cancelled") << r.final.error;
    EXPECT_LT(r.tokens.size(), 200u);
  }
  // After shutdown, submissions fail at once instead of hanging.
  auto r = e->run(prompt_of(0), greedy(3));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(e->device().kv_pool().used_blocks(), 0u);
}

}  // namespace
}  // namespace fw::actors

namespace fw::actors {
namespace {

// [scheduler] prefill_chunk_ms: on the device that decodes, each prefill chunk is sized by the
// fitted chunk-time model. A budget no chunk meets takes the smallest chunks (16 rows after the
// 32-row first one), a generous one the largest (prefill_chunk); the tokens never change.
TEST_F(engine_test, a_prefill_time_budget_sizes_the_chunks_and_keeps_the_tokens) {
  std::vector<int32_t> prompt;
  for (int j = 0; j < 400; ++j) prompt.push_back(3 + (j * 37) % 250);
  auto run_with = [&](double budget_s) {
    tweak_ = [budget_s](engine_limits& l) {
      l.prefill_chunk = 256;
      l.prefill_chunk_s = budget_s;
    };
    auto e = start(4096, 16, 512);
    EXPECT_TRUE(e);
    auto r = e->run(prompt, greedy(12));
    EXPECT_TRUE(r.ok()) << r.final.error;
    auto s = e->stats();
    EXPECT_TRUE(s);
    expect_no_leak(*e);
    return std::make_tuple(r.tokens, s->prefill_chunks, s->prefill_chunk_rows);
  };
  const auto [fixed_tokens, fixed_chunks, fixed_rows] = run_with(0);
  const auto [tight_tokens, tight_chunks, tight_rows] = run_with(1e-7);
  const auto [loose_tokens, loose_chunks, loose_rows] = run_with(10.0);
  // The prompt's last token goes into the first decode step: 399 rows are prefilled.
  EXPECT_EQ(fixed_chunks, 2u);  // 256 + 143
  EXPECT_EQ(tight_chunks, 1u + (399u - 32u + 15u) / 16u);
  EXPECT_EQ(loose_chunks, 1u + 2u);  // 32, then 256 + 111
  for (auto rows : {fixed_rows, tight_rows, loose_rows}) EXPECT_EQ(rows, 399u);
  EXPECT_EQ(tight_tokens, fixed_tokens);
  EXPECT_EQ(loose_tokens, fixed_tokens);
  EXPECT_EQ(fixed_tokens.size(), 12u);
}

}  // namespace
}  // namespace fw::actors
