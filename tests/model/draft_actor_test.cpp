// The draft actor on the real SmolLM2-135M model, through the engine: the draft actor proposes,
// the decode worker verifies. For each draft kind four concurrent greedy requests reproduce plain
// decoding token for token, with drafts proposed and accepted (sampled requests with the hybrid
// draft finish, its q verified); a separate draft with threads of its own drafts ahead while the
// target verifies and some of those pre-drafts are used; a draft actor that dies mid-generation
// costs no request a token, and its replacement drafts again.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <sstream>

#include "actors/engine.hpp"
#include "runtime/config/config.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "runtime/step/generator.hpp"
#include "tests/model/feature_map_fixture.hpp"
#include "tests/model/model_fixture.hpp"
#include "tests/support/sampling_presets.hpp"

namespace fw {
namespace {

using ::fw::test::greedy;
using namespace std::chrono_literals;

const char* const prompts[] = {
    "The quick brown fox",
    "Order #48213 arrived cracked. Order #48213 arrived cracked. Order #",
    "The capital of France is Paris. The capital of Germany is Berlin. The capital of Italy is",
    "def fibonacci(n):\n    ",
};
constexpr uint32_t max_tokens = 48;

std::unique_ptr<cpu_backend> make_backend(const model& m, uint32_t kv_tokens) {
  cpu_backend_options o;
  o.threads = 2;
  o.kv_tokens = kv_tokens;
  return std::make_unique<cpu_backend>(m.config(), m.weights(), o);
}

/// The sum of a series' samples in a Prometheus text page (0 when absent).
double metric(const std::string& page, const std::string& name) {
  std::istringstream in(page);
  double sum = 0;
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name, 0) == 0 && (line[name.size()] == ' ' || line[name.size()] == '{'))
      sum += std::stod(line.substr(line.rfind(' ') + 1));
  return sum;
}

const std::vector<std::vector<int32_t>>& plain_tokens(const std::shared_ptr<const model>& m) {
  static std::vector<std::vector<int32_t>> out;
  if (out.empty()) {
    auto be = make_backend(*m, 1024);
    generator plain(*m, *be, generator_options{1024, 512, false});
    for (const char* p : prompts) {
      auto r = plain.run(m->vocab().encode(p, false, true), greedy(max_tokens));
      EXPECT_TRUE(r);
      out.push_back(r ? r->tokens : std::vector<int32_t>{});
    }
  }
  return out;
}

/// A config's drafter and an engine started with it (the engine goes first: its draft actor uses
/// the drafter).
struct spec_engine {
  std::unique_ptr<drafter> draft;
  std::unique_ptr<actors::engine> engine;
};

/// The drafter is made over the engine's own decode backend (layer-skip runs the target's layers
/// over the target's KV there).
spec_engine start(const std::shared_ptr<const model>& m, config& cfg,
                  std::shared_ptr<const actors::engine_faults> faults = nullptr) {
  spec_engine out;
  auto be = make_backend(*m, 4 * 512);
  auto d = make_drafter(cfg.speculative, m, *be, 2048);
  EXPECT_TRUE(d) << d.err().what();
  if (!d) return out;
  out.draft = std::move(*d);
  actors::engine_limits lim;
  lim.n_ctx = 512;
  lim.draft = out.draft.get();
  lim.draft_runs_ahead = cfg.speculative.draft_threads > 0;
  lim.policy = make_k_policy(cfg.speculative, 0);
  auto e = actors::engine::start(m, std::move(be), lim, actors::engine_options{std::move(faults)});
  EXPECT_TRUE(e) << e.err().what();
  if (e) out.engine = std::move(*e);
  return out;
}

/// The four prompts at once; each request's tokens.
std::vector<actors::completed_request> run_all(actors::engine& e, const model& m) {
  std::vector<std::future<actors::completed_request>> futs;
  for (const char* p : prompts)
    futs.push_back(std::async(std::launch::async, [&e, &m, p] { return e.run(m.vocab().encode(p, false, true), greedy(max_tokens)); }));
  std::vector<actors::completed_request> out;
  for (auto& f : futs) {
    EXPECT_EQ(f.wait_for(120s), std::future_status::ready) << "a request hangs";
    out.push_back(f.get());
  }
  return out;
}

struct draft_case {
  const char* name;
  const char* draft;
  uint32_t draft_threads;
  bool after_verdicts = false;  ///< proposes from the history alone: drafted when the verdict arrives
};

void PrintTo(const draft_case& c, std::ostream* os) { *os << c.name; }

class draft_actor_test : public ::testing::TestWithParam<draft_case> {};

TEST_P(draft_actor_test, greedy_output_through_the_engine_is_identical_to_plain_decoding) {
  FW_REQUIRE_REAL_MODEL();
  const draft_case c = GetParam();
  const auto& plain = plain_tokens(model_);
  config cfg;
  ASSERT_TRUE(cfg.set("speculative.draft", c.draft));
  // A fixed k: every step drafts. With k = auto the speculation gate times the drafts and may
  // hold the slow ones (layer-skip, self-quant) off for most of these short requests.
  ASSERT_TRUE(cfg.set("speculative.k", "3"));
  ASSERT_TRUE(cfg.set("speculative.draft_threads", std::to_string(c.draft_threads)));
  if (std::string(c.draft) == "layer-skip") {
    ASSERT_TRUE(cfg.set("speculative.draft_layers", "24"));
  }
  if (std::string(c.draft) == "feature" || std::string(c.draft) == "hybrid") {
    const std::string map = test::fitted_feature_map(model_);
    ASSERT_FALSE(map.empty());
    ASSERT_TRUE(cfg.set("speculative.feature_map", map));
  }
  auto se = start(model_, cfg);
  ASSERT_TRUE(se.engine);
  auto done = run_all(*se.engine, *model_);
  for (size_t i = 0; i < done.size(); ++i) {
    ASSERT_TRUE(done[i].ok()) << done[i].final.error;
    EXPECT_EQ(done[i].tokens, plain[i]) << c.name << ", prompt: " << prompts[i];
  }
  const std::string page = se.engine->render_metrics();
  const double drafted = metric(page, "flywheel:spec_decode_num_draft_tokens_total");
  const double accepted = metric(page, "flywheel:spec_decode_num_accepted_tokens_total");
  const double hits = metric(page, "flywheel:spec_decode_draft_ahead_hits_total");
  const double ahead_s = metric(page, "flywheel:spec_decode_draft_ahead_seconds_total");
  const double hidden_s = metric(page, "flywheel:spec_decode_draft_hidden_seconds_total");
  std::printf("%s: %.0f drafted, %.0f accepted, %.0f ahead hits, %.3f s drafted ahead, %.3f s hidden\n", c.name,
              drafted, accepted, hits, ahead_s, hidden_s);
  EXPECT_GT(drafted, 0);
  EXPECT_GT(accepted, 0);
  if (c.draft_threads > 0) {
    // Drafted ahead during verification, and some of it used: time taken off the critical path.
    EXPECT_GT(ahead_s, 0);
    EXPECT_GT(hits, 0);
    EXPECT_GT(hidden_s, 0);
    EXPECT_LE(hidden_s, ahead_s);
  } else if (c.after_verdicts) {
    // Each next proposal drafted when the verdict arrived, while the decode worker reported the
    // step: the asks were answered from those.
    EXPECT_GT(hits, 0);
    EXPECT_GT(ahead_s, 0);
    EXPECT_LE(hidden_s, ahead_s);
  } else {
    EXPECT_EQ(ahead_s, 0);
    EXPECT_EQ(hits, 0);
  }
  se.engine->shutdown();
}

INSTANTIATE_TEST_SUITE_P(drafts, draft_actor_test,
                         ::testing::Values(draft_case{"ngram", "ngram", 0, true},
                                           draft_case{"hybrid", "hybrid", 0, true},
                                           draft_case{"layer_skip", "layer-skip", 0},
                                           draft_case{"self_quant", "self-quant", 0},
                                           draft_case{"self_quant_ahead", "self-quant", 1}),
                         [](const auto& info) { return std::string(info.param.name); });

// Sampled requests through the engine with the hybrid draft: the feature draft's proposals carry
// its q from the draft actor to the decode worker (rejection sampling), the asks are still
// answered from the drafts made at the verdict (the draws are fixed by seed and position), and
// every request finishes with some drafts accepted and some rejected.
TEST(draft_actor_sampled, sampled_requests_with_the_hybrid_draft_verify_its_distribution_and_finish) {
  FW_REQUIRE_REAL_MODEL();
  config cfg;
  ASSERT_TRUE(cfg.set("speculative.draft", "hybrid"));
  ASSERT_TRUE(cfg.set("speculative.k", "3"));
  const std::string map = test::fitted_feature_map(model_);
  ASSERT_FALSE(map.empty());
  ASSERT_TRUE(cfg.set("speculative.feature_map", map));
  auto se = start(model_, cfg);
  ASSERT_TRUE(se.engine);
  const model& m = *model_;
  std::vector<std::future<actors::completed_request>> futs;
  uint64_t seed = 3;
  for (const char* p : prompts) {
    sampling_params sp = test::unfiltered(0.8f, static_cast<int>(max_tokens));
    sp.seed = seed++;
    futs.push_back(std::async(std::launch::async, [&se, &m, p, sp] {
      return se.engine->run(m.vocab().encode(p, false, true), sp);
    }));
  }
  for (auto& f : futs) {
    ASSERT_EQ(f.wait_for(120s), std::future_status::ready) << "a request hangs";
    const auto done = f.get();
    ASSERT_TRUE(done.ok()) << done.final.error;
    EXPECT_EQ(done.tokens.size(), max_tokens);
  }
  const std::string page = se.engine->render_metrics();
  const double drafted = metric(page, "flywheel:spec_decode_num_draft_tokens_total");
  const double accepted = metric(page, "flywheel:spec_decode_num_accepted_tokens_total");
  const double hits = metric(page, "flywheel:spec_decode_draft_ahead_hits_total");
  std::printf("sampled hybrid: %.0f drafted, %.0f accepted, %.0f ahead hits\n", drafted, accepted, hits);
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted);
  EXPECT_GT(hits, 0);
  se.engine->shutdown();
}

TEST(draft_actor_crash, a_dying_draft_actor_costs_no_request_a_token_and_its_replacement_drafts_again) {
  FW_REQUIRE_REAL_MODEL();
  const auto& plain = plain_tokens(model_);
  config cfg;
  ASSERT_TRUE(cfg.set("speculative.draft", "ngram"));
  ASSERT_TRUE(cfg.set("speculative.k", "3"));
  // The draft actor dies at its 6th ask (all four requests are decoding by then).
  auto asks = std::make_shared<std::atomic<int>>(0);
  auto faults = std::make_shared<actors::engine_faults>();
  faults->crash_draft = [asks] { return asks->fetch_add(1) == 5; };
  auto se = start(model_, cfg, faults);
  ASSERT_TRUE(se.engine);
  auto done = run_all(*se.engine, *model_);
  for (size_t i = 0; i < done.size(); ++i) {
    ASSERT_TRUE(done[i].ok()) << done[i].final.error;
    EXPECT_EQ(done[i].tokens, plain[i]) << "prompt: " << prompts[i];
  }
  EXPECT_GT(asks->load(), 6) << "the replacement draft actor was never asked";
  auto h = se.engine->health();
  ASSERT_TRUE(h);
  bool seen = false;
  for (size_t i = 0; i < h->names.size(); ++i)
    if (h->names[i] == "draft") {
      seen = true;
      EXPECT_EQ(h->crashes[i], 1u);
      EXPECT_EQ(h->states[i], "running");
    }
  EXPECT_TRUE(seen) << "health lists no draft worker";
  auto s = se.engine->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->failed, 0u);
  EXPECT_EQ(s->resumed, 0u) << "no request needed re-admission: the decode worker never stopped";
  se.engine->shutdown();
}

}  // namespace
}  // namespace fw
