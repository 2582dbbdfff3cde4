// The CPU forward pass on tiny generated models of every weight type: batching, multi-sequence
// batches and KV truncation must not change the numbers.
#include <gtest/gtest.h>

#include <cstring>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/device/cpu/cpu_backend.hpp"
#include "tests/support/test_models.hpp"

namespace fw {
namespace {

// Row results are computed by the same kernels in the same order whatever the batch shape, so
// they agree to float rounding.
constexpr float batch_shape_tolerance = 1e-4f;

float max_abs_diff(const float* a, const float* b, size_t n) {
  float d = 0;
  for (size_t i = 0; i < n; ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

class cpu_backend_test : public ::testing::TestWithParam<ggml_type> {
 protected:
  void SetUp() override {
    tiny_model_spec spec;
    spec.weight_type = GetParam();
    spec.seed = 11;
    m_ = test::load_tiny(spec, std::string("backend_") + std::string(type_traits(GetParam()).name));
    ASSERT_TRUE(m_);
    cpu_backend_options o;
    o.threads = 2;
    o.kv_tokens = 256;
    o.kv_block_tokens = 16;
    be_ = std::make_unique<cpu_backend>(m_->config(), m_->weights(), o);
  }
  std::vector<int32_t> tokens(size_t n, int32_t salt = 0) const {
    std::vector<int32_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((i * 37 + 5 + salt) % m_->config().n_vocab);
    return t;
  }
  std::shared_ptr<const model> m_;
  std::unique_ptr<cpu_backend> be_;
};

TEST_P(cpu_backend_test, prefill_in_one_batch_equals_token_by_token) {
  const auto toks = tokens(40);
  const size_t nv = m_->config().n_vocab;
  auto& pool = be_->kv_pool();
  kv_handle a = *pool.allocate(0), b = *pool.allocate(0);
  forward_batch batch;
  std::vector<float> all, step;
  batch.add_sequence(&a, toks.data(), toks.size(), 0, true);
  ASSERT_TRUE(be_->forward(batch, all));
  ASSERT_EQ(all.size(), toks.size() * nv);
  EXPECT_EQ(a.n_tokens, toks.size());
  for (size_t i = 0; i < toks.size(); ++i) {
    batch.clear();
    batch.add_sequence(&b, &toks[i], 1, static_cast<int32_t>(i), false);
    ASSERT_TRUE(be_->forward(batch, step));
    ASSERT_EQ(step.size(), nv);
    ASSERT_LT(max_abs_diff(all.data() + i * nv, step.data(), nv), batch_shape_tolerance) << "row " << i;
  }
  for (float v : all) ASSERT_TRUE(std::isfinite(v));
  ASSERT_TRUE(pool.release(a));
  ASSERT_TRUE(pool.release(b));
  EXPECT_EQ(pool.used_blocks(), 0u);
}

TEST_P(cpu_backend_test, two_sequences_in_one_batch_equal_separate_runs) {
  const auto t1 = tokens(20, 1), t2 = tokens(33, 2);
  const size_t nv = m_->config().n_vocab;
  auto& pool = be_->kv_pool();
  kv_handle a = *pool.allocate(0), b = *pool.allocate(0), c = *pool.allocate(0), d = *pool.allocate(0);
  forward_batch batch;
  std::vector<float> joint, sep1, sep2;
  batch.add_sequence(&a, t1.data(), t1.size(), 0, false);
  batch.add_sequence(&b, t2.data(), t2.size(), 0, false);
  ASSERT_TRUE(be_->forward(batch, joint));
  ASSERT_EQ(joint.size(), 2 * nv);
  batch.clear();
  batch.add_sequence(&c, t1.data(), t1.size(), 0, false);
  ASSERT_TRUE(be_->forward(batch, sep1));
  batch.clear();
  batch.add_sequence(&d, t2.data(), t2.size(), 0, false);
  ASSERT_TRUE(be_->forward(batch, sep2));
  EXPECT_LT(max_abs_diff(joint.data(), sep1.data(), nv), batch_shape_tolerance);
  EXPECT_LT(max_abs_diff(joint.data() + nv, sep2.data(), nv), batch_shape_tolerance);
  // Different prompts give different logits (the comparison above is not vacuous).
  EXPECT_GT(max_abs_diff(sep1.data(), sep2.data(), nv), 1e-3f);
  for (auto* h : {&a, &b, &c, &d}) ASSERT_TRUE(pool.release(*h));
}

TEST_P(cpu_backend_test, truncate_then_recompute_gives_the_same_logits) {
  const auto toks = tokens(30);
  const size_t nv = m_->config().n_vocab;
  auto& pool = be_->kv_pool();
  kv_handle h = *pool.allocate(0);
  forward_batch batch;
  std::vector<float> full, again;
  batch.add_sequence(&h, toks.data(), toks.size(), 0, true);
  ASSERT_TRUE(be_->forward(batch, full));
  // Roll back to 17 tokens (as after a rejected speculation) and recompute the tail.
  ASSERT_TRUE(pool.truncate(h, 17));
  EXPECT_EQ(h.n_tokens, 17u);
  batch.clear();
  batch.add_sequence(&h, toks.data() + 17, toks.size() - 17, 17, true);
  ASSERT_TRUE(be_->forward(batch, again));
  for (size_t i = 17; i < toks.size(); ++i)
    ASSERT_LT(max_abs_diff(full.data() + i * nv, again.data() + (i - 17) * nv, nv), batch_shape_tolerance);
  ASSERT_TRUE(pool.release(h));
}

TEST_P(cpu_backend_test, pool_exhaustion_is_an_error_value_and_changes_nothing) {
  const auto toks = tokens(300);  // the pool holds 256 tokens
  auto& pool = be_->kv_pool();
  kv_handle h = *pool.allocate(0);
  forward_batch batch;
  std::vector<float> out;
  batch.add_sequence(&h, toks.data(), toks.size(), 0, false);
  auto r = be_->forward(batch, out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().code, errc::out_of_memory);
  EXPECT_EQ(h.n_tokens, 0u);
  ASSERT_TRUE(pool.release(h));
  EXPECT_EQ(pool.used_blocks(), 0u);
}

TEST_P(cpu_backend_test, out_of_vocabulary_token_is_rejected) {
  auto& pool = be_->kv_pool();
  kv_handle h = *pool.allocate(0);
  forward_batch batch;
  std::vector<float> out;
  const int32_t bad = static_cast<int32_t>(m_->config().n_vocab);
  batch.add_sequence(&h, &bad, 1, 0, false);
  auto r = be_->forward(batch, out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().code, errc::invalid_argument);
  ASSERT_TRUE(pool.release(h));
}

TEST_P(cpu_backend_test, scalar_and_simd_paths_agree_on_logits) {
  if (cpu::best_simd_level() == cpu::simd_level::scalar) GTEST_SKIP() << "no SIMD path on this host";
  const auto toks = tokens(12);
  ::setenv("FW_SIMD", "scalar", 1);
  cpu_backend_options o;
  o.threads = 1;
  o.kv_tokens = 64;
  cpu_backend scalar_be(m_->config(), m_->weights(), o);
  ::unsetenv("FW_SIMD");
  for (const auto& k : scalar_be.kernel_paths()) EXPECT_EQ(k.path.rfind("scalar", 0), 0u) << k.path;
  kv_handle a = *scalar_be.kv_pool().allocate(0), b = *be_->kv_pool().allocate(0);
  forward_batch ba, bb;
  std::vector<float> la, lb;
  ba.add_sequence(&a, toks.data(), toks.size(), 0, false);
  bb.add_sequence(&b, toks.data(), toks.size(), 0, false);
  ASSERT_TRUE(scalar_be.forward(ba, la));
  ASSERT_TRUE(be_->forward(bb, lb));
  float scale = 0;
  for (float v : la) scale = std::max(scale, std::fabs(v));
  // Paths sum floats in another order; with 8-bit activations a rounding flip of one
  // activation in an early layer can move logits by a little more.
  const bool int8_acts = cpu::select_dot_kernel(GetParam(), cpu::simd_level::scalar).act == cpu::act_format::q8x;
  const float rel = int8_acts ? 1e-2f : 1e-3f;
  EXPECT_LT(max_abs_diff(la.data(), lb.data(), la.size()), rel * std::max(1.f, scale));
}

// The AVX2 path with 256-bit vpdpbusd (FW_SIMD=avx2vnni; EVEX-encoded on an AVX-512 host) gives
// the logits of the plain AVX2 path bit for bit: the same integer sums, fewer instructions; and
// the kernel report names the path it took.
TEST_P(cpu_backend_test, avx2_vnni_path_equals_avx2_bit_for_bit) {
  if (!cpu::host_features().has_avx2_vnni()) GTEST_SKIP() << "host has neither AVX-VNNI nor AVX-512 VNNI";
  const auto toks = tokens(12);
  cpu_backend_options o;
  o.threads = 2;
  o.kv_tokens = 64;
  std::vector<std::vector<float>> logits;
  for (const char* level : {"avx2", "avx2vnni"}) {
    ::setenv("FW_SIMD", level, 1);
    cpu_backend be(m_->config(), m_->weights(), o);
    ::unsetenv("FW_SIMD");
    std::string path;  // e.g. "avx2vnni packed (int8 activations)"
    for (const auto& k : be.kernel_paths())
      if (k.weight_type == type_traits(GetParam()).name) path = k.path;
    EXPECT_EQ(path.substr(0, path.find(' ')), level) << path;
    kv_handle h = *be.kv_pool().allocate(0);
    forward_batch b;
    b.add_sequence(&h, toks.data(), toks.size(), 0, true);  // logits of every position
    logits.emplace_back();
    ASSERT_TRUE(be.forward(b, logits.back()));
    ASSERT_TRUE(be.kv_pool().release(h));
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)), 0);
}

// A half-precision KV cache rounds cached keys and values to 11 significant bits: logits stay
// close to the float32 cache's, over a prompt and then decode steps that read the cache.
// A half-precision or q8 cache (kv_cache.type "f16" / "q8_0") against the float cache: logits
// within a bound over a prompt and three decode steps. The bound for q8 is four times f16's: int8
// keeps ~7 bits per value where half keeps 11 (measured on this random tiny model: 1.3% of the
// largest logit with float weights, 0.06% for f16; 2.4-3.8% against 1.9-2.3% with int8 activations).
TEST_P(cpu_backend_test, half_precision_and_q8_kv_caches_stay_close_to_f32) {
  const auto toks = tokens(24);
  for (kv_dtype dt : {kv_dtype::f16, kv_dtype::q8}) {
    SCOPED_TRACE(dt == kv_dtype::f16 ? "f16 cache" : "q8 cache");
    cpu_backend_options o;
    o.threads = 1;
    o.kv_tokens = 64;
    o.kv_type = dt;
    cpu_backend small_be(m_->config(), m_->weights(), o);
    EXPECT_EQ(small_be.kv_pool().layout().dtype, dt);
    // f16: half the bytes; q8: head_dim + 4 bytes per token and head where f32 has 4 head_dim.
    const size_t hd = m_->config().head_dim;
    if (dt == kv_dtype::f16) EXPECT_EQ(small_be.kv_pool().layout().block_bytes() * 2, be_->kv_pool().layout().block_bytes());
    else EXPECT_EQ(small_be.kv_pool().layout().block_bytes() * 4 * hd, be_->kv_pool().layout().block_bytes() * (hd + 4));
    kv_handle a = *small_be.kv_pool().allocate(0), b = *be_->kv_pool().allocate(0);
    std::vector<float> la, lb;
    float worst = 0;
    for (size_t step = 0; step < 4; ++step) {  // the prompt, then three single-token steps
      const size_t from = step == 0 ? 0 : 20 + step - 1, n = step == 0 ? 20 : 1;
      forward_batch ba, bb;
      ba.add_sequence(&a, toks.data() + from, n, static_cast<int32_t>(from), false);
      bb.add_sequence(&b, toks.data() + from, n, static_cast<int32_t>(from), false);
      ASSERT_TRUE(small_be.forward(ba, la));
      ASSERT_TRUE(be_->forward(bb, lb));
      float scale = 0;
      for (float v : lb) scale = std::max(scale, std::fabs(v));
      // With 8-bit activations a rounding flip moved by the cache's rounding propagates further
      // through the random tiny model (the kernel-level bound is attention_test's 2e-3).
      const bool int8_acts = cpu::select_dot_kernel(GetParam(), cpu::simd_level::scalar).act == cpu::act_format::q8x;
      const float rel = (int8_acts ? 5e-2f : 2e-2f) * (dt == kv_dtype::q8 ? 4.f : 1.f);
      const float diff = max_abs_diff(la.data(), lb.data(), la.size());
      worst = std::max(worst, diff / std::max(1.f, scale));
      EXPECT_LT(diff, rel * std::max(1.f, scale)) << "step " << step;
    }
    std::printf("[ info ] %s cache: worst logit deviation %.4f of the largest logit\n", dt == kv_dtype::f16 ? "f16" : "q8", worst);
    ASSERT_TRUE(small_be.kv_pool().release(a));
    ASSERT_TRUE(be_->kv_pool().release(b));
  }
}

TEST_P(cpu_backend_test, last_layer_attention_entropy_is_reported_per_logits_row) {
  const auto toks = tokens(20);
  auto& pool = be_->kv_pool();
  kv_handle h = *pool.allocate(0);
  forward_batch batch;
  forward_result out;
  batch.add_sequence(&h, toks.data(), 1, 0, false);  // one position: attention is certain
  ASSERT_TRUE(be_->forward(batch, out));
  auto e = out.entropy;
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NEAR(e[0], 0.0f, 1e-5f);
  batch.clear();
  batch.add_sequence(&h, toks.data() + 1, toks.size() - 1, 1, true);
  ASSERT_TRUE(be_->forward(batch, out));
  e = out.entropy;
  ASSERT_EQ(e.size(), toks.size() - 1);
  for (size_t i = 0; i < e.size(); ++i) {
    EXPECT_GT(e[i], 0.0f);
    EXPECT_LE(e[i], std::log(static_cast<float>(i + 2)) + 1e-4f) << "at most ln(context length)";
  }
  ASSERT_TRUE(pool.release(h));
}

INSTANTIATE_TEST_SUITE_P(all_types, cpu_backend_test,
                         ::testing::Values(ggml_type::f32, ggml_type::f16, ggml_type::bf16,
                                           ggml_type::q4_0, ggml_type::q4_1, ggml_type::q8_0),
                         [](const auto& info) { return std::string(type_traits(info.param).name); });

// A backend that packs its own copies may drop the pages of the originals, but only of the
// mapped file: the model's load-time converted copies (convert_to, e.g. the quantizer's f32
// view of a Q4_1 file) must still read as before, else everyone reading the model sees zeros.
TEST(cpu_backend_packing, converted_weights_survive_a_packing_backend) {
  tiny_model_spec spec;
  spec.weight_type = ggml_type::q8_0;
  spec.n_embd = 128;  // enough rows for packed groups
  spec.n_ff = 256;
  spec.seed = 77;
  ASSERT_TRUE(test::load_tiny(spec, "pack_converted"));
  weight_load_options lo;
  lo.convert_to = ggml_type::f32;
  auto m = model::load(test::temp_dir() + "/pack_converted.gguf", lo);
  ASSERT_TRUE(m) << m.err().what();
  const auto& wq = (*m)->weights().layers[0].wq;
  const std::vector<uint8_t> before(wq.data, wq.data + wq.row_bytes * wq.n);
  cpu_backend_options o;
  o.threads = 1;
  o.pack_weights = true;
  { cpu_backend be((*m)->config(), (*m)->weights(), o); }
  EXPECT_TRUE(std::equal(before.begin(), before.end(), wq.data));
}

}  // namespace
}  // namespace fw
