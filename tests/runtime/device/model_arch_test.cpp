// The architectures flywheel runs. (1) Against llama.cpp's reference data (tests/data/
// arch_reference.json, made by tools/reference/make_arch_reference.py): the tiny random model of
// each case is rebuilt from its recorded spec (the generator is deterministic), then its first-step
// logits and greedy continuations are compared with llama.cpp's. f32 weights and KV cache on both
// sides: plain float math that differs only in summation order. (2) What each architecture
// reads from its own metadata, the clear refusals (an unknown architecture, LongRoPE) and the
// warning for a context longer than a sliding window.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/gguf/gguf_writer.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "runtime/step/generator.hpp"
#include "tests/support/test_models.hpp"

namespace fw {
namespace {

// Logits of these tiny models are O(1..10); float summation order moves them by ~1e-5.
constexpr float logit_tolerance = 1e-3f;

tiny_model_spec spec_of(const nlohmann::json& j) {
  tiny_model_spec s;
  s.arch = j.at("arch");
  s.vocab = j.at("vocab");
  s.n_embd = j.at("embd");
  s.n_layer = j.at("layers");
  s.n_head = j.at("heads");
  s.n_head_kv = j.at("kv_heads");
  s.n_ff = j.at("ff");
  s.head_dim = j.value("head_dim", 0);
  s.tied_output = !j.value("untied", false);
  s.seed = j.value("seed", 1);
  s.rope_freqs = j.value("rope_freqs", false);
  return s;
}

TEST(arch_reference, every_architecture_matches_llama_cpp) {
  std::ifstream in(std::string(FW_SOURCE_DIR) + "/tests/data/arch_reference.json");
  ASSERT_TRUE(in) << "tests/data/arch_reference.json is missing";
  const auto ref = nlohmann::json::parse(in);
  std::vector<std::string> archs;
  for (const auto& c : ref["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    auto m = test::load_tiny(spec_of(c["spec"]), "arch_ref_" + name);
    if (!m) continue;  // load_tiny reported the failure
    archs.push_back(m->config().architecture);
    cpu_backend_options o;
    o.threads = 2;
    o.kv_tokens = 256;
    cpu_backend be(m->config(), m->weights(), o);
    generator gen(*m, be, generator_options{256, 256, true});
    sampling_params greedy;
    greedy.temperature = 0;
    greedy.ignore_eos = true;
    float worst = 0;
    for (const auto& r : c["runs"]) {
      const auto ids = r["prompt_ids"].get<std::vector<int32_t>>();
      const auto want = r["greedy_ids"].get<std::vector<int32_t>>();
      const auto logits = r["logits"].get<std::vector<float>>();
      greedy.max_tokens = static_cast<int32_t>(want.size());
      auto res = gen.run(ids, greedy);
      ASSERT_TRUE(res) << res.err().what();
      EXPECT_EQ(res->tokens, want) << "greedy continuation differs from llama.cpp's";
      ASSERT_EQ(res->first_logits.size(), logits.size());
      float diff = 0;
      for (size_t i = 0; i < logits.size(); ++i) diff = std::max(diff, std::fabs(res->first_logits[i] - logits[i]));
      EXPECT_LT(diff, logit_tolerance);
      worst = std::max(worst, diff);
    }
    std::printf("%-10s (%s): %zu prompts, greedy identical, worst first-step logit diff %.2e\n", name.c_str(),
                m->config().architecture.c_str(), c["runs"].size(), worst);
  }
  for (const char* a : {"llama", "qwen2", "qwen3", "phi3"})
    EXPECT_NE(std::find(archs.begin(), archs.end(), a), archs.end()) << a << " has no reference case";
}

TEST(model_arch, each_architecture_reads_its_own_metadata) {
  tiny_model_spec s;
  s.arch = "qwen3";
  s.head_dim = 32;  // q is 4 x 32 = 128 wide over a 64-wide residual stream
  auto m = test::load_tiny(s, "arch_qwen3_meta");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->config().architecture, "qwen3");
  EXPECT_EQ(m->config().head_dim, 32u);
  EXPECT_EQ(m->config().q_dim(), 128u);
  EXPECT_EQ(m->config().rope, rope_style::neox);
  EXPECT_TRUE(m->config().qk_norm);
  EXPECT_NE(m->weights().layers[0].q_norm, nullptr);
  s.arch = "qwen2";
  s.head_dim = 0;
  m = test::load_tiny(s, "arch_qwen2_meta");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->config().rope, rope_style::neox);
  EXPECT_NE(m->weights().layers[1].qkv_bias, nullptr);
  EXPECT_EQ(m->weights().layers[1].q_norm, nullptr);
  s.arch = "phi3";
  m = test::load_tiny(s, "arch_phi3_meta");
  if (!m) return;  // load_tiny reported why
  // The fused tensors are split into row views of one matrix each.
  const auto& l = m->weights().layers[0];
  EXPECT_EQ(l.wk.data, l.wq.data + l.wq.n * l.wq.row_bytes);
  EXPECT_EQ(l.wv.data, l.wk.data + l.wk.n * l.wk.row_bytes);
  EXPECT_EQ(l.w_up.data, l.w_gate.data + l.w_gate.n * l.w_gate.row_bytes);
  EXPECT_EQ(l.w_up.n, s.n_ff);
}

TEST(model_arch, unknown_architectures_and_longrope_are_refused_by_name) {
  const std::string dir = test::temp_dir();
  auto write = [&](const std::string& arch, bool longrope, const std::string& name) {
    gguf_writer w;
    w.add_string("general.architecture", arch);
    for (const char* k : {"block_count", "context_length", "feed_forward_length", "attention.head_count"})
      w.add_uint32(arch + "." + k, 8);
    w.add_uint32(arch + ".embedding_length", 64);
    w.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
    if (longrope) w.add_tensor_owned("rope_factors_long.weight", {4}, ggml_type::f32, std::vector<uint8_t>(16));
    EXPECT_TRUE(w.write(dir + "/" + name));
    return model_config::from_gguf(**gguf_file::open(dir + "/" + name));
  };
  auto mamba = write("mamba", false, "arch_mamba.gguf");
  ASSERT_FALSE(mamba);
  EXPECT_EQ(mamba.err().code, errc::unsupported);
  EXPECT_NE(mamba.err().what().find("architecture 'mamba' is not supported (supported: llama, qwen2, qwen3, phi3)"),
            std::string::npos) << mamba.err().what();
  auto phi = write("phi3", true, "arch_longrope.gguf");
  ASSERT_FALSE(phi);
  EXPECT_NE(phi.err().what().find("LongRoPE"), std::string::npos) << phi.err().what();
}

TEST(model_arch, a_sliding_window_longer_than_the_context_is_said) {
  tiny_model_spec s;
  s.n_ctx = 512;
  s.sliding_window = 64;
  ASSERT_TRUE(test::load_tiny(s, "arch_swa"));
  const std::string path = test::temp_dir() + "/arch_swa.gguf";
  auto cfg = config::from_string("[model]\npath = \"" + path + "\"\nctx_size = 64\n[compute]\nthreads = 1\n", "swa.toml");
  ASSERT_TRUE(cfg);
  auto parts = build_runtime(*cfg);
  ASSERT_TRUE(parts) << parts.err().what();
  EXPECT_EQ(parts->m->config().sliding_window, 64u);
  auto has_warning = [](const runtime_parts& p) {
    return std::any_of(p.warnings.begin(), p.warnings.end(),
                       [](const std::string& w) { return w.find("sliding attention window of 64") != std::string::npos; });
  };
  EXPECT_FALSE(has_warning(*parts));  // within the window: the same computation, nothing to say
  cfg->model.ctx_size = 256;
  parts = build_runtime(*cfg);
  ASSERT_TRUE(parts) << parts.err().what();
  EXPECT_TRUE(has_warning(*parts));
}

}  // namespace
}  // namespace fw
