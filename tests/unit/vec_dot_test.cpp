// Every SIMD dot kernel against the scalar reference, for every weight type, with a named
// tolerance; and the quantized kernels against a float dot of the dequantized weights.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/quant_ref.hpp"
#include "kernels/cpu/vec_dot.hpp"

namespace fw::cpu {
namespace {

// Float sums in another order differ by rounding: relative to sum(|w*x|).
constexpr double simd_vs_ref_rel_tolerance = 1e-5;
// 8-bit activations carry ~0.4% error per element: relative to sum(|w*x|).
constexpr double int8_activation_rel_tolerance = 2e-2;

struct row_data {
  std::vector<float> w, x;
  std::vector<uint8_t> wq;
  std::vector<block_q8x> xq;
  double abs_sum = 0;
};

row_data make_row(ggml_type t, int64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  row_data r;
  r.w.resize(k);
  r.x.resize(k);
  for (auto& v : r.w) v = nd(rng);
  for (auto& v : r.x) v = nd(rng);
  r.wq.resize(row_bytes(type_traits(t), k));
  quantize_row_ref(t, r.w.data(), r.wq.data(), k);
  std::vector<float> deq(k);
  dequantize_row_ref(t, r.wq.data(), deq.data(), k);
  r.w = deq;  // the weights the kernels really see
  for (int64_t i = 0; i < k; ++i) r.abs_sum += std::fabs(double(r.w[i]) * r.x[i]);
  r.xq.resize(k / 32);
  ref::quantize_q8x(r.x.data(), r.xq.data(), k);
  return r;
}

class vec_dot_test : public ::testing::TestWithParam<ggml_type> {};

TEST_P(vec_dot_test, avx2_matches_scalar_reference) {
  if (!host_features().has_avx2()) GTEST_SKIP() << "host has no AVX2/FMA/F16C";
  const ggml_type t = GetParam();
  for (int64_t k : {32, 64, 576, 1536}) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      auto r = make_row(t, k, seed * 31 + k);
      const auto ref_k = select_dot_kernel(t, simd_level::scalar);
      const auto simd_k = select_dot_kernel(t, simd_level::avx2);
      ASSERT_EQ(simd_k.level, simd_level::avx2);
      const void* x = ref_k.act == act_format::q8x ? static_cast<const void*>(r.xq.data()) : r.x.data();
      const float a = ref_k.dot(k, r.wq.data(), x);
      const float b = simd_k.dot(k, r.wq.data(), x);
      EXPECT_NEAR(a, b, simd_vs_ref_rel_tolerance * r.abs_sum + 1e-6) << "k=" << k << " seed=" << seed;
    }
  }
}

TEST_P(vec_dot_test, reference_matches_float_dot_of_dequantized_weights) {
  const ggml_type t = GetParam();
  const int64_t k = 576;
  auto r = make_row(t, k, 7);
  double exact = 0;
  for (int64_t i = 0; i < k; ++i) exact += double(r.w[i]) * r.x[i];
  const auto kern = select_dot_kernel(t, simd_level::scalar);
  const void* x = kern.act == act_format::q8x ? static_cast<const void*>(r.xq.data()) : r.x.data();
  const double tol = (kern.act == act_format::q8x ? int8_activation_rel_tolerance : 1e-6) * r.abs_sum;
  EXPECT_NEAR(kern.dot(k, r.wq.data(), x), exact, tol);
}

INSTANTIATE_TEST_SUITE_P(all_types, vec_dot_test,
                         ::testing::Values(ggml_type::f32, ggml_type::f16, ggml_type::bf16,
                                           ggml_type::q4_0, ggml_type::q4_1, ggml_type::q8_0),
                         [](const auto& info) { return std::string(type_traits(info.param).name); });

TEST(quantize_q8x, avx2_matches_reference_bit_for_bit) {
  if (!host_features().has_avx2()) GTEST_SKIP() << "host has no AVX2/FMA/F16C";
  std::mt19937_64 rng(3);
  std::normal_distribution<float> nd(0.f, 3.f);
  std::vector<float> x(1536);
  for (auto& v : x) v = nd(rng);
  x[5] = 0.f;
  std::fill(x.begin() + 64, x.begin() + 96, 0.f);  // an all-zero block
  std::vector<block_q8x> a(x.size() / 32), b(x.size() / 32);
  ref::quantize_q8x(x.data(), a.data(), x.size());
  avx2::quantize_q8x(x.data(), b.data(), x.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].d, b[i].d) << i;
    EXPECT_EQ(a[i].sum, b[i].sum) << i;
    for (int j = 0; j < 32; ++j) ASSERT_EQ(a[i].qs[j], b[i].qs[j]) << i << "," << j;
  }
  EXPECT_EQ(a[2].d, 0.f);
}

TEST(select_dot_kernel, honours_the_level_cap) {
  EXPECT_EQ(select_dot_kernel(ggml_type::q4_1, simd_level::scalar).level, simd_level::scalar);
  EXPECT_EQ(select_dot_kernel(ggml_type::q4_1, simd_level::scalar).act, act_format::q8x);
  EXPECT_EQ(select_dot_kernel(ggml_type::f16, simd_level::scalar).act, act_format::f32);
}

}  // namespace
}  // namespace fw::cpu
