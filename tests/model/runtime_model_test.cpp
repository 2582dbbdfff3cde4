// The actor runtime and speculative decoding on the real SmolLM2-135M model: 16 concurrent
// requests through the engine equal sequential generation, and every draft kind reproduces
// plain greedy decoding token for token (8 prompts x 64 tokens), the feature and hybrid drafts with a
// map fit here on calibration prompts.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "actors/engine.hpp"
#include "runtime/config/config.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "runtime/spec/drafts/feature_drafter.hpp"
#include "runtime/spec/drafts/feature_fit.hpp"
#include "runtime/step/generator.hpp"
#include "tests/model/feature_map_fixture.hpp"
#include "tests/model/model_fixture.hpp"
#include "tests/support/sampling_presets.hpp"

namespace fw {
namespace {

using ::fw::test::greedy;

const char* const prompts[] = {
    "The quick brown fox",
    "def fibonacci(n):\n    ",
    "Once upon a time, in a small village,",
    "List three primary colors: red, blue and",
    "Order #48213 arrived cracked. Order #48213 arrived cracked. Order #",
    "The capital of France is Paris. The capital of Germany is Berlin. The capital of Italy is",
    "Water boils at a temperature of",
    "In 1969, Neil Armstrong",
};


std::unique_ptr<cpu_backend> make_backend(const model& m, uint32_t kv_tokens) {
  cpu_backend_options o;
  o.threads = 2;
  o.kv_tokens = kv_tokens;
  return std::make_unique<cpu_backend>(m.config(), m.weights(), o);
}

TEST(runtime_real_model, sixteen_concurrent_requests_equal_sequential_generation) {
  FW_REQUIRE_REAL_MODEL();
  auto ref_be = make_backend(*model_, 512);
  generator ref(*model_, *ref_be, generator_options{512, 512, false});
  std::vector<std::vector<int32_t>> inputs, expected;
  for (int i = 0; i < 16; ++i) {
    inputs.push_back(model_->vocab().encode(prompts[i % 8] + std::string(i >= 8 ? " and then" : ""), false, true));
    auto r = ref.run(inputs.back(), greedy(12 + i));
    ASSERT_TRUE(r);
    expected.push_back(r->tokens);
  }
  actors::engine_limits lim;
  lim.n_ctx = 512;
  auto e = actors::engine::start(model_, make_backend(*model_, 16 * 128), lim);
  ASSERT_TRUE(e) << e.err().what();
  std::vector<std::future<actors::completed_request>> futs;
  for (int i = 0; i < 16; ++i)
    futs.push_back(std::async(std::launch::async, [&, i] { return (*e)->run(inputs[i], greedy(12 + i)); }));
  for (int i = 0; i < 16; ++i) {
    auto r = futs[i].get();
    ASSERT_TRUE(r.ok()) << r.final.error;
    EXPECT_EQ(r.tokens, expected[i]) << "request " << i;
  }
  (*e)->shutdown();
}

class draft_kind_test : public ::testing::TestWithParam<const char*> {};

TEST_P(draft_kind_test, greedy_output_is_identical_to_plain_decoding) {
  FW_REQUIRE_REAL_MODEL();
  auto be = make_backend(*model_, 1024);
  config cfg;
  // A "model" draft: the target file itself (the only model of this vocabulary shipped here).
  if (std::string(GetParam()) == "model") {
    ASSERT_TRUE(cfg.set("speculative.draft_model", test::real_model_path()));
  }
  // The feature and hybrid drafts: a map fit on calibration prompts (not the test prompts).
  if (std::string(GetParam()) == "feature" || std::string(GetParam()) == "hybrid") {
    const std::string map = test::fitted_feature_map(model_);
    ASSERT_FALSE(map.empty());
    ASSERT_TRUE(cfg.set("speculative.feature_map", map));
  }
  // Layer-skip: at half depth this model's early exit proposes junk (11% accepted at k = 1; 35%
  // at 24 of 30 layers), so the adaptive policy would stop drafting before anything is accepted.
  if (std::string(GetParam()) == "layer-skip") {
    ASSERT_TRUE(cfg.set("speculative.draft_layers", "24"));
  }
  ASSERT_TRUE(cfg.set("speculative.draft", GetParam()));
  ASSERT_TRUE(cfg.set("speculative.k", "auto"));
  auto d = make_drafter(cfg.speculative, model_, *be, 1024);
  ASSERT_TRUE(d) << d.err().what();
  ASSERT_TRUE(*d);
  // Plain greedy continuations, computed once for all draft kinds.
  static std::vector<std::vector<int32_t>> plain_tokens;
  if (plain_tokens.empty()) {
    generator plain(*model_, *be, generator_options{1024, 512, false});
    for (const char* p : prompts) {
      auto a = plain.run(model_->vocab().encode(p, false, true), greedy(64));
      ASSERT_TRUE(a);
      plain_tokens.push_back(a->tokens);
    }
  }
  // k = auto as the tools run it: cost-aware, with a verify-cost table of the shape measured on a
  // 2-core CPU (a calibration here would follow the load of the parallel tests, and with it how
  // many low-confidence feature tokens are worth verifying).
  const std::vector<double> verify_cost = {1.0, 1.07, 1.19, 1.34, 1.46, 1.63, 1.87, 2.13, 2.49};
  k_policy_config kc = make_k_policy(cfg.speculative, 0, verify_cost).config();
  kc.learn_step_costs = false;  // nor re-priced by the steps' own times, for the same reason
  generator spec(*model_, *be, generator_options{1024, 512, false, d->get(), k_policy(kc)});
  uint64_t drafted = 0, accepted = 0;
  for (size_t i = 0; i < std::size(prompts); ++i) {
    const char* p = prompts[i];
    auto b = spec.run(model_->vocab().encode(p, false, true), greedy(64));
    ASSERT_TRUE(b);
    EXPECT_EQ(b->tokens, plain_tokens[i]) << "draft " << GetParam() << ", prompt: " << p;
    drafted += b->spec.draft_tokens;
    accepted += b->spec.accepted_tokens;
  }
  std::printf("draft %s: %llu drafted, %llu accepted\n", GetParam(), static_cast<unsigned long long>(drafted),
              static_cast<unsigned long long>(accepted));
  EXPECT_GT(drafted, 0u);
  EXPECT_GT(accepted, 0u);
  EXPECT_EQ(be->kv_pool().used_blocks(), 0u);
}

INSTANTIATE_TEST_SUITE_P(all_drafts, draft_kind_test, ::testing::Values("ngram", "feature", "hybrid", "layer-skip", "self-quant", "model"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (auto& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });


}  // namespace
}  // namespace fw
