// GPTQ: the inverse factor against its definition, the Gram matrix calibration keeps, and GPTQ
// rounding against round-to-nearest (with the same importance-weighted group search) on inputs
// with correlated channels, measured on rows it was not fitted on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "kernels/format/fw_formats.hpp"
#include "kernels/format/quant_ref.hpp"
#include "runtime/quant/activation_stats.hpp"
#include "runtime/quant/gptq.hpp"
#include "runtime/quant/scale_search.hpp"

namespace fw {
namespace {

/// rows x k inputs whose channels mix a few shared factors (as activations do) plus noise.
std::vector<float> correlated_rows(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  const int64_t factors = 6;
  std::mt19937 mix_rng(7);  // the same mixing for every call: one distribution
  std::vector<float> mix(static_cast<size_t>(factors * k));
  for (auto& v : mix) v = nd(mix_rng);
  std::vector<float> x(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r) {
    float f[factors];
    for (auto& v : f) v = nd(rng);
    for (int64_t c = 0; c < k; ++c) {
      float s = 0.2f * nd(rng);
      for (int64_t i = 0; i < factors; ++i) s += f[i] * mix[i * k + c];
      x[r * k + c] = s;
    }
  }
  return x;
}

std::vector<double> gram_of(const std::vector<float>& x, int64_t rows, int64_t k) {
  std::vector<double> h(static_cast<size_t>(k * k), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t a = 0; a < k; ++a)
      for (int64_t b = 0; b < k; ++b) h[a * k + b] += static_cast<double>(x[r * k + a]) * x[r * k + b];
  return h;
}

/// sum over rows and outputs of (x . w_n - x . q_n)^2 / sum (x . w_n)^2; q dequantized from `type`.
double output_error(const std::vector<float>& x, int64_t rows, const std::vector<float>& w,
                    const std::vector<uint8_t>& q, int64_t k, ggml_type type) {
  const int64_t n = static_cast<int64_t>(w.size()) / k;
  const size_t rb = row_bytes(type_traits(type), static_cast<uint64_t>(k));
  std::vector<float> back(w.size());
  for (int64_t r = 0; r < n; ++r) dequantize_row_ref(type, q.data() + r * rb, back.data() + r * k, k);
  double e = 0, ref = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < n; ++o) {
      double y = 0, yq = 0;
      for (int64_t c = 0; c < k; ++c) y += x[r * k + c] * w[o * k + c], yq += x[r * k + c] * back[o * k + c];
      e += (y - yq) * (y - yq), ref += y * y;
    }
  return e / ref;
}

TEST(gptq, inverse_factor_is_the_upper_cholesky_factor_of_the_damped_inverse) {
  const int64_t k = 48, rows = 400;
  const auto x = correlated_rows(rows, k, 1);
  auto h = gram_of(x, rows, k);
  h[5 * k + 5] = 0;  // a dead channel (its row and column are zero in a real Gram matrix)
  for (int64_t c = 0; c < k; ++c) h[5 * k + c] = h[c * k + 5] = 0;
  const double damp = 0.01;
  auto u = gptq_inverse_factor(h, k, damp);
  ASSERT_TRUE(u) << u.err().message;
  // The damped H the factor stands for.
  double mean = 0;
  int live = 0;
  for (int64_t j = 0; j < k; ++j)
    if (h[j * k + j] > 0) mean += h[j * k + j], ++live;
  mean /= live;
  auto hd = h;
  for (int64_t j = 0; j < k; ++j) hd[j * k + j] = (hd[j * k + j] > 0 ? hd[j * k + j] : 1.0) + damp * mean;
  for (int64_t a = 0; a < k; ++a)
    for (int64_t b = 0; b < a; ++b) EXPECT_EQ((*u)[a * k + b], 0.0) << "U is upper triangular";
  // (U^T U) H_damped = I.
  double worst = 0;
  for (int64_t a = 0; a < k; ++a)
    for (int64_t b = 0; b < k; ++b) {
      double s = 0;
      for (int64_t c = 0; c < k; ++c) {
        double inv_ac = 0;  // (U^T U)[a][c]
        for (int64_t p = 0; p <= std::min(a, c); ++p) inv_ac += (*u)[p * k + a] * (*u)[p * k + c];
        s += inv_ac * hd[c * k + b];
      }
      worst = std::max(worst, std::fabs(s - (a == b ? 1.0 : 0.0)));
    }
  EXPECT_LT(worst, 1e-8);
}

TEST(gptq, an_indefinite_matrix_is_refused) {
  const std::vector<double> h = {1, 2, 2, 1};
  auto u = gptq_inverse_factor(h, 2, 0.01);
  ASSERT_FALSE(u);
  EXPECT_NE(u.err().message.find("not positive definite"), std::string::npos) << u.err().message;
}

TEST(gptq, calibration_keeps_the_gram_matrix_of_the_rows_not_sampled) {
  const int64_t k = 40, rows = 37, ld = 44;
  std::vector<float> x(static_cast<size_t>(rows * ld), 99.f);  // padding beyond k must not count
  const auto src = correlated_rows(rows, k, 3);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < k; ++c) x[r * ld + c] = src[r * k + c];
  const auto all = gram_of(src, rows, k);
  cpu::thread_pool pool(2);
  for (cpu::thread_pool* p : {static_cast<cpu::thread_pool*>(nullptr), &pool}) {
    activation_stats st(k, 0.9, 16, true);
    st.add_batch(x.data(), ld, 20, p);  // fills the sample, 4 rows to the Gram matrix
    st.add_batch(x.data() + 20 * ld, ld, rows - 20, p);  // 2 replace samples, which go to it
    ASSERT_EQ(st.samples_count(), 16);
    ASSERT_EQ(st.gram().size(), static_cast<size_t>(k * k));
    // The Gram matrix and the sample's together are every row's, each once.
    const auto held = gram_of(st.samples(), 16, k);
    for (int64_t i = 0; i < k * k; ++i)
      EXPECT_NEAR(st.gram()[i] + held[i], all[i], 1e-4 * (1 + std::fabs(all[i])));
  }
  EXPECT_TRUE(activation_stats(k, 0.9, 16).gram().empty()) << "kept only when asked for";
}

TEST(gptq, beats_round_to_nearest_on_held_out_rows_of_correlated_inputs) {
  const int64_t k = 256, n = 24, fit_rows = 3000, test_rows = 500;
  const auto x = correlated_rows(fit_rows, k, 11);
  const auto held = correlated_rows(test_rows, k, 12);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 0.05f);
  std::vector<float> w(static_cast<size_t>(n * k));
  for (auto& v : w) v = nd(rng);
  const auto h = gram_of(x, fit_rows, k);
  std::vector<float> imp(static_cast<size_t>(k));
  for (int64_t c = 0; c < k; ++c) imp[c] = static_cast<float>(h[c * k + c] / fit_rows);
  auto u = gptq_inverse_factor(h, k, 0.01);
  ASSERT_TRUE(u);
  cpu::thread_pool pool(2);
  for (ggml_type t : {ggml_type::fw_w4a16_g32, ggml_type::fw_w4a16_g128}) {
    ASSERT_TRUE(gptq_supports(t));
    const auto rtn = quantize_rows(w, k, t, &imp);
    const auto gq = gptq_quantize_rows(w, k, t, *u, imp, pool);
    ASSERT_EQ(gq.size(), rtn.size());
    const double e_rtn = output_error(held, test_rows, w, rtn, k, t);
    const double e_gptq = output_error(held, test_rows, w, gq, k, t);
    EXPECT_LT(e_gptq, 0.2 * e_rtn) << type_traits(t).name << ": GPTQ " << e_gptq << " vs round-to-nearest " << e_rtn;
    // Act-order: the most active channels first, H permuted alike, every group chosen up front.
    std::vector<int32_t> order(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) order[i] = static_cast<int32_t>(i);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return imp[a] > imp[b]; });
    std::vector<double> hp(h.size());
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < k; ++j) hp[i * k + j] = h[order[i] * k + order[j]];
    auto up = gptq_inverse_factor(hp, k, 0.01);
    ASSERT_TRUE(up);
    const auto ga = gptq_quantize_rows(w, k, t, *up, imp, pool, order);
    const double e_act = output_error(held, test_rows, w, ga, k, t);
    EXPECT_LT(e_act, 0.2 * e_rtn) << type_traits(t).name << ": act-order GPTQ " << e_act << " vs round-to-nearest " << e_rtn;
    // Every value stays on its group's 4-bit grid (the file format holds nothing else).
    const int g = static_cast<int>(type_traits(t).block_size);
    const size_t gb = w4_group_bytes(g);
    std::vector<float> vals(static_cast<size_t>(g));
    std::vector<uint8_t> again(gb);
    for (size_t off = 0; off < gq.size(); off += gb) {
      fw_format::dequantize_w4_group(gq.data() + off, g, vals.data());
      const auto* hd = reinterpret_cast<const w4_group_header*>(gq.data() + off);
      fw_format::requantize_w4_group(vals.data(), g, fp16_to_fp32(hd->d), fp16_to_fp32(hd->m), again.data());
      ASSERT_EQ(0, std::memcmp(again.data(), gq.data() + off, gb));
    }
  }
  EXPECT_FALSE(gptq_supports(ggml_type::q8_0));
}

}  // namespace
}  // namespace fw
