// The CUDA backend end to end: greedy parity with the CPU backend on the real model (divergences
// only at near-ties), every architecture and weight format of the tiny models, CUDA graph replay,
// decode and prefill on their two streams at once, device KV copies, and the config door
// (build_runtime with [[devices]] kind = "cuda", then the engine). GPU tests skip with the
// reason printed where no CUDA device exists; the door's refusal is checked there instead.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "actors/engine.hpp"
#include "cuda_test_support.hpp"
#include "model/model_fixture.hpp"
#include "runtime/config/config.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "tests/support/sampling_presets.hpp"
#include "tools/tiny_model/tiny_model.hpp"
#include "tests/support/test_models.hpp"

namespace {

using namespace fw;

// A divergence between the GPU and the CPU backend must be a near-tie on the CPU: the two best
// logits within this.
constexpr float near_tie = 0.25f;
// Logits of the GPU and of the CPU agree within this share of the logits' range (tiny models):
// float weights against the same weights dequantized to f32 (both f32 activations), Q4_0 / Q4_1 /
// Q8_0 / W4A16 against the CPU's own integer products (int8 / int16 activations, quantized
// alike); the sums run in other orders.
constexpr double logit_tolerance = 2e-3;

cuda_backend_options gpu_options(uint32_t kv_tokens = 4096) {
  cuda_backend_options o;
  o.kv_tokens = kv_tokens;
  return o;
}

std::unique_ptr<cpu_backend> cpu_of(const model& m, uint32_t kv_tokens = 4096) {
  cpu_backend_options o;
  o.threads = 2;
  o.kv_tokens = kv_tokens;
  return std::make_unique<cpu_backend>(m.config(), m.weights(), o);
}

void expect_same_or_near_tie(const test::greedy_run& cpu, const test::greedy_run& gpu, const std::string& what) {
  ASSERT_EQ(cpu.tokens.size(), gpu.tokens.size()) << what;
  for (size_t i = 0; i < cpu.tokens.size(); ++i) {
    if (cpu.tokens[i] == gpu.tokens[i]) continue;
    EXPECT_LT(cpu.margins[i], near_tie) << what << ": tokens differ at step " << i << " where the CPU's best logit led by "
                                        << cpu.margins[i];
    return;  // after a divergence the continuations are different texts
  }
}

TEST(cuda_backend_test, greedy_tokens_match_the_cpu_backend_on_the_real_model) {
  FW_REQUIRE_GPU();
  FW_REQUIRE_REAL_MODEL();
  auto gpu = cuda_backend::create(model_->config(), model_->weights(), gpu_options());
  ASSERT_TRUE(gpu) << gpu.err().message;
  auto cpu = cpu_of(*model_);
  for (const char* text : {"The capital of France is", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.",
                           "Once upon a time, in a small village by the sea, there lived"}) {
    const auto prompt = model_->vocab().encode(text, true, false);
    const auto a = test::greedy_decode(*cpu, prompt, 48);
    const auto b = test::greedy_decode(**gpu, prompt, 48);
    expect_same_or_near_tie(a, b, text);
  }
}

struct arch_case {
  const char* arch;
  ggml_type type;
  bool rope_freqs;
};

TEST(cuda_backend_test, every_architecture_and_weight_format_of_the_tiny_models_matches_the_cpu) {
  FW_REQUIRE_GPU();
  const arch_case cases[] = {{"llama", ggml_type::f32, false},  {"llama", ggml_type::q4_0, true},
                             {"llama", ggml_type::q8_0, false}, {"llama", ggml_type::fw_w4a16_g128, false},
                             {"qwen2", ggml_type::f16, false},  {"qwen3", ggml_type::q4_1, false},
                             {"phi3", ggml_type::bf16, false}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.arch) + " " + std::string(type_traits(c.type).name));
    tiny_model_spec spec;
    spec.arch = c.arch, spec.weight_type = c.type, spec.rope_freqs = c.rope_freqs;
    spec.n_embd = 128, spec.n_head = 4, spec.n_head_kv = 2, spec.n_ff = 256, spec.n_layer = 2;
    const std::string tag = std::string("cuda_") + c.arch + "_" + std::string(type_traits(c.type).name);
    auto m = test::load_tiny(spec, tag);
    ASSERT_TRUE(m);
    auto gpu = cuda_backend::create(m->config(), m->weights(), gpu_options(1024));
    ASSERT_TRUE(gpu) << gpu.err().message;
    // The reference, on the CPU backend: for the formats with integer products the same file
    // (int8 / int16 activations on both sides), for the others the file with every matrix dequantized to
    // f32 at load (exactly the values the GPU decodes, f32 activations on both sides).
    const bool integer = c.type == ggml_type::q4_0 || c.type == ggml_type::q4_1 || c.type == ggml_type::q8_0 ||
                         c.type == ggml_type::fw_w4a16_g128;
    weight_load_options f32;
    if (!integer) f32.convert_to = ggml_type::f32;
    auto ref = model::load(test::temp_dir() + "/" + tag + ".gguf", f32);
    ASSERT_TRUE(ref) << ref.err().message;
    auto cpu = cpu_of(**ref, 1024);
    const std::vector<int32_t> prompt{1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57};
    const auto a = test::greedy_decode(*cpu, prompt, 12, 8, true);
    const auto b = test::greedy_decode(**gpu, prompt, 12, 8, true);
    ASSERT_EQ(a.logits.size(), b.logits.size());
    for (size_t s = 0; s < a.logits.size() && a.tokens[s] == b.tokens[s]; ++s) {
      const auto [lo, hi] = std::minmax_element(a.logits[s].begin(), a.logits[s].end());
      const double range = *hi - *lo;
      for (size_t i = 0; i < a.logits[s].size(); ++i)
        ASSERT_NEAR(b.logits[s][i], a.logits[s][i], logit_tolerance * range) << "step " << s << " logit " << i;
    }
    EXPECT_EQ(a.tokens, b.tokens) << c.arch;
  }
}

TEST(cuda_backend_test, decode_steps_replayed_from_cuda_graphs_give_the_eager_logits) {
  FW_REQUIRE_GPU();
  FW_REQUIRE_REAL_MODEL();
  auto eager_o = gpu_options();
  eager_o.graphs = false;
  auto eager = cuda_backend::create(model_->config(), model_->weights(), eager_o);
  auto graphs = cuda_backend::create(model_->config(), model_->weights(), gpu_options());
  ASSERT_TRUE(eager && graphs);
  const auto prompt = model_->vocab().encode("Write a haiku about the sea.", true, false);
  const auto a = test::greedy_decode(**eager, prompt, 40, 64, true);
  const auto b = test::greedy_decode(**graphs, prompt, 40, 64, true);
  EXPECT_EQ(a.tokens, b.tokens);
  for (size_t s = 0; s < a.logits.size(); ++s) ASSERT_EQ(a.logits[s], b.logits[s]) << "step " << s;
  EXPECT_GT((*graphs)->graph_replays(), 30u);
  EXPECT_LE((*graphs)->graph_captures(), 2u) << "one shape, one key-count bucket: captured once (twice at 256 keys)";
  EXPECT_EQ((*eager)->graph_replays(), 0u);
}

TEST(cuda_backend_test, a_prefill_on_the_low_priority_stream_and_decodes_on_the_high_one_run_together) {
  FW_REQUIRE_GPU();
  FW_REQUIRE_REAL_MODEL();
  auto gpu = cuda_backend::create(model_->config(), model_->weights(), gpu_options(8192));
  ASSERT_TRUE(gpu);
  const auto short_prompt = model_->vocab().encode("List three colours:", true, false);
  std::vector<int32_t> long_prompt;
  while (long_prompt.size() < 2000) {
    const auto t = model_->vocab().encode("The quick brown fox jumps over the lazy dog. ", false, false);
    long_prompt.insert(long_prompt.end(), t.begin(), t.end());
  }
  const auto alone_short = test::greedy_decode(**gpu, short_prompt, 32);
  const auto alone_long = test::greedy_decode(**gpu, long_prompt, 4, 512);
  test::greedy_run together_short, together_long;
  std::thread prefill([&] { together_long = test::greedy_decode(**gpu, long_prompt, 4, 512); });
  together_short = test::greedy_decode(**gpu, short_prompt, 32);
  prefill.join();
  EXPECT_EQ(together_short.tokens, alone_short.tokens);
  EXPECT_EQ(together_long.tokens, alone_long.tokens);
  EXPECT_EQ((*gpu)->kv_pool().used_blocks(), 0u);
}

TEST(cuda_backend_test, a_device_kv_copy_continues_like_the_original) {
  FW_REQUIRE_GPU();
  FW_REQUIRE_REAL_MODEL();
  auto gpu = cuda_backend::create(model_->config(), model_->weights(), gpu_options());
  ASSERT_TRUE(gpu);
  auto& pool = (*gpu)->kv_pool();
  EXPECT_FALSE(pool.host_addressable());
  const auto prompt = model_->vocab().encode("Tell me about the moon and its phases.", true, false);
  auto kv = pool.allocate(0);
  forward_result r;
  ASSERT_TRUE(prefill_tokens(**gpu, *kv, prompt.data(), prompt.size(), 0, 64, r));
  kv_handle copy;
  ASSERT_TRUE(pool.copy_tokens(pool, *kv, copy));  // cudaMemcpy between the pool's own blocks
  ASSERT_EQ(copy.n_tokens, kv->n_tokens);
  forward_result a, b;
  for (auto [h, out] : {std::pair{&*kv, &a}, {&copy, &b}}) {
    forward_batch fb;
    fb.kv.push_back(h);
    fb.add(42, static_cast<int32_t>(prompt.size()), 0, true);
    ASSERT_TRUE((*gpu)->forward(fb, *out));
  }
  EXPECT_EQ(a.logits, b.logits);
  ASSERT_TRUE(pool.release(*kv));
  ASSERT_TRUE(pool.release(copy));
  // A pool too small for a prompt answers out_of_memory and computes nothing.
  auto small = cuda_backend::create(model_->config(), model_->weights(), gpu_options(32));
  ASSERT_TRUE(small);
  auto h = (*small)->kv_pool().allocate(0);
  auto full = prefill_tokens(**small, *h, prompt.data(), prompt.size(), 0, 64, r);
  if (prompt.size() > 32) {
    ASSERT_FALSE(full);
    EXPECT_EQ(full.err().code, errc::out_of_memory);
  }
}

TEST(cuda_backend_test, a_cuda_device_in_the_config_serves_through_the_engine_or_is_refused_by_name) {
  FW_REQUIRE_REAL_MODEL();
  auto make = [&](const char* kind) {
    auto c = config::from_string(std::string("[[devices]]\nkind = \"") + kind + "\"\nid = 0\nrole = \"both\"\n", "gpu.toml");
    EXPECT_TRUE(c);
    c->model.path = test::real_model_path();
    return build_runtime(*c);
  };
  auto gpu = make("cuda");
  if (auto n = cuda_device_count(); !n) {
    // No GPU here (CI): the config is refused with the runtime's reason, naming the entry.
    ASSERT_FALSE(gpu);
    EXPECT_EQ(gpu.err().code, errc::unsupported);
    EXPECT_NE(gpu.err().message.find("kind = \"cuda\", id = 0: no CUDA device"), std::string::npos) << gpu.err().message;
    return;
  }
  ASSERT_TRUE(gpu) << gpu.err().message;
  EXPECT_EQ(gpu->device()->name(), "cuda");
  auto cpu = make("cpu");
  ASSERT_TRUE(cpu);
  const auto prompt = model_->vocab().encode("What is two plus two?", true, false);
  std::vector<std::vector<int32_t>> out;
  for (auto* parts : {&*gpu, &*cpu}) {
    auto e = actors::engine::start(*parts);
    ASSERT_TRUE(e) << e.err().message;
    auto r = (*e)->run(prompt, test::greedy(32));
    ASSERT_TRUE(r.ok()) << r.final.error;
    out.push_back(r.tokens);
    // A second turn re-sends the conversation: the prefix cache serves it (device copies on the GPU).
    auto again = (*e)->run(prompt, test::greedy(32));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again.tokens, r.tokens);
    bool released = false;  // finished sequences are released a few messages after their final event
    for (int i = 0; i < 3000 && !released; ++i) {
      auto s = (*e)->stats();
      ASSERT_TRUE(s);
      released = s->kv_used_blocks == 0 && s->decoding == 0;
      if (!released) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(released) << "KV blocks still in use";
    (*e)->shutdown();
  }
  EXPECT_EQ(out[0], out[1]) << "greedy tokens through the engine, GPU vs CPU";
}

}  // namespace
