// The real SmolLM2-135M model against llama.cpp's reference data (tests/data/
// generation_reference.json, made by tools/reference/make_generation_reference.py): prompt
// tokenization, greedy 32-token continuations and the first step's logits.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/cpu_backend.hpp"
#include "runtime/generator.hpp"
#include "tests/model/model_fixture.hpp"

namespace fw {
namespace {

// llama.cpp keeps K/V in f16 and rounds Q and attention weights to f16; flywheel keeps f32.
// On this model's logits (range about -10..25) that moves values by a few hundredths.
constexpr float first_logits_max_abs_tolerance = 0.25f;

nlohmann::json load_reference() {
  std::ifstream in(std::string(FW_SOURCE_DIR) + "/tests/data/generation_reference.json");
  if (!in) return nullptr;
  return nlohmann::json::parse(in);
}

TEST(generation_reference, greedy_continuations_and_first_logits_match_llama_cpp) {
  FW_REQUIRE_REAL_MODEL();
  const auto ref = load_reference();
  ASSERT_FALSE(ref.is_null()) << "tests/data/generation_reference.json is missing";
  ASSERT_GE(ref["cases"].size(), 8u);
  cpu_backend_options o;
  o.threads = 2;
  o.kv_tokens = 512;
  cpu_backend be(model_->config(), model_->weights(), o);
  generator gen(*model_, be, generator_options{512, 512, true});
  sampling_params greedy;
  greedy.temperature = 0;
  greedy.ignore_eos = true;
  greedy.max_tokens = ref["n_gen"].get<int>();
  int exact = 0;
  float worst = 0;
  for (const auto& c : ref["cases"]) {
    const std::string prompt = c["prompt"];
    const auto ids = c["prompt_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(model_->vocab().encode(prompt, false, true), ids) << "tokenization of " << prompt;
    auto res = gen.run(ids, greedy);
    ASSERT_TRUE(res) << res.err().what();
    const auto want = c["greedy_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(res->tokens, want) << "prompt: " << prompt << "\n got: " << model_->vocab().decode(res->tokens)
                                 << "\nwant: " << model_->vocab().decode(want);
    exact += res->tokens == want;
    const auto lid = c["logit_ids"].get<std::vector<int32_t>>();
    const auto lv = c["logits"].get<std::vector<float>>();
    ASSERT_EQ(res->first_logits.size(), model_->config().n_vocab);
    float diff = 0;
    for (size_t i = 0; i < lid.size(); ++i) diff = std::max(diff, std::fabs(res->first_logits[lid[i]] - lv[i]));
    EXPECT_LT(diff, first_logits_max_abs_tolerance) << "prompt: " << prompt;
    worst = std::max(worst, diff);
  }
  std::printf("greedy continuations identical to llama.cpp: %d/%zu; worst first-step logit diff %.4f\n", exact,
              ref["cases"].size(), worst);
}

}  // namespace
}  // namespace fw
