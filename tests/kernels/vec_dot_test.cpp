// Every SIMD path the host supports (AVX2, AVX-512/VNNI) against the scalar reference, for every
// weight type, with a named tolerance; gemv against per-row dots; the activation quantizers bit for
// bit; and the quantized reference kernels against a float dot of the dequantized weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <cstring>
#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/format/quant_ref.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/vec_dot.hpp"

namespace fw::cpu {
namespace {

// Float sums in another order differ by rounding: relative to sum(|w*x|).
constexpr double simd_vs_ref_rel_tolerance = 1e-5;
// 8-bit activations: each x is rounded to its block's step d = amax / 127, so the dot is off by at
// most sum |w_i| * d / 2 (the bound int8_rounding_bound computes), plus float rounding.
constexpr double int8_bound_slack = 1.0 + 1e-4;

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

// Whether this host can run a path; the reason to skip when it cannot.
const char* missing(simd_level level) {
  if (level == simd_level::avx2 && !host_features().has_avx2()) return "host has no AVX2/FMA/F16C";
  if (level == simd_level::avx2_vnni && !host_features().has_avx2_vnni())
    return "host has neither AVX-VNNI nor AVX-512 VNNI (256-bit vpdpbusd)";
  if (level == simd_level::avx512 && !host_features().has_avx512_vnni())
    return "host has no AVX-512 F/BW/VL with VNNI";
  return nullptr;
}

const void* act_of(const dot_kernel& kern, const row_data& r) {
  return kern.act == act_format::q8x ? static_cast<const void*>(r.xq.data()) : r.x.data();
}

// Row lengths: single block, odd block counts (the pair kernels' tails), the model's widths, and
// for float types lengths that are not a multiple of the vector width.
std::vector<int64_t> lengths_for(ggml_type t) {
  std::vector<int64_t> ks = {32, 64, 96, 576, 1536};
  if (type_traits(t).block_size == 1) ks.insert(ks.end(), {1, 7, 40, 100, 250});
  return ks;
}

/// The worst-case error of a dot product with x quantized to block_q8x: half a step per element.
double int8_rounding_bound(const row_data& r) {
  double bound = 0;
  for (size_t b = 0; b < r.xq.size(); ++b)
    for (size_t i = 0; i < 32; ++i) bound += std::fabs(double(r.w[b * 32 + i])) * r.xq[b].d / 2;
  return bound;
}

class vec_dot_test : public ::testing::TestWithParam<std::tuple<ggml_type, simd_level>> {};
/// The packed layouts of the ggml types on each SIMD path.
class vec_dot_packed_test : public ::testing::TestWithParam<std::tuple<ggml_type, simd_level>> {};
/// The packed layouts of the quantized types (int8 activation blocks).
class vec_dot_packed_q_test : public vec_dot_packed_test {};

TEST_P(vec_dot_test, simd_path_matches_scalar_reference) {
  const auto [t, level] = GetParam();
  if (const char* why = missing(level)) GTEST_SKIP() << why;
  const auto ref_k = select_dot_kernel(t, simd_level::scalar);
  const auto simd_k = select_dot_kernel(t, level);
  ASSERT_EQ(simd_k.level, level);
  ASSERT_EQ(simd_k.act, ref_k.act);
  for (int64_t k : lengths_for(t)) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      auto r = make_row(t, k, seed * 31 + k);
      const float a = ref_k.dot(k, r.wq.data(), act_of(ref_k, r));
      const float b = simd_k.dot(k, r.wq.data(), act_of(simd_k, r));
      EXPECT_NEAR(a, b, simd_vs_ref_rel_tolerance * r.abs_sum + 1e-6) << "k=" << k << " seed=" << seed;
    }
  }
}

// gemv over n rows gives each row's dot bit for bit (whatever the grouping of rows), and so
// matches the reference within the same tolerance.
TEST_P(vec_dot_test, gemv_rows_equals_dot_per_row) {
  const auto [t, level] = GetParam();
  if (const char* why = missing(level)) GTEST_SKIP() << why;
  const auto kern = select_dot_kernel(t, level);
  ASSERT_NE(kern.gemv, nullptr);
  for (int64_t k : {int64_t{64}, int64_t{96}, int64_t{576}}) {
    const size_t rb = row_bytes(type_traits(t), k);
    const size_t stride = rb + 8;  // rows need not be packed
    for (int64_t n : {1, 3, 4, 7, 9}) {
      std::vector<uint8_t> w(stride * n);
      auto x = make_row(t, k, 1000 + k);
      std::vector<row_data> rows;
      for (int64_t i = 0; i < n; ++i) {
        rows.push_back(make_row(t, k, 77 * i + k));
        std::copy(rows.back().wq.begin(), rows.back().wq.end(), w.begin() + i * stride);
      }
      std::vector<float> out(n + 1, -1.f);
      kern.gemv(k, w.data(), stride, n, act_of(kern, x), out.data());
      EXPECT_EQ(out[n], -1.f) << "wrote past n rows";
      const auto ref_k = select_dot_kernel(t, simd_level::scalar);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(out[i], kern.dot(k, w.data() + i * stride, act_of(kern, x))) << "k=" << k << " n=" << n << " row " << i;
        double abs_sum = 0;
        for (int64_t j = 0; j < k; ++j) abs_sum += std::fabs(double(rows[i].w[j]) * x.x[j]);
        EXPECT_NEAR(out[i], ref_k.dot(k, w.data() + i * stride, act_of(ref_k, x)),
                    simd_vs_ref_rel_tolerance * abs_sum + 1e-6);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    all_types, vec_dot_test,
    ::testing::Combine(::testing::Values(ggml_type::f32, ggml_type::f16, ggml_type::bf16, ggml_type::q4_0,
                                         ggml_type::q4_1, ggml_type::q8_0),
                       ::testing::Values(simd_level::avx2, simd_level::avx512)),  // each against the scalar reference
    [](const auto& info) {
      return std::string(type_traits(std::get<0>(info.param)).name) + "_" + to_string(std::get<1>(info.param));
    });

INSTANTIATE_TEST_SUITE_P(
    all_types, vec_dot_packed_test,
    ::testing::Combine(::testing::Values(ggml_type::f32, ggml_type::f16, ggml_type::bf16, ggml_type::q4_0,
                                         ggml_type::q4_1, ggml_type::q8_0),
                       ::testing::Values(simd_level::avx2, simd_level::avx2_vnni, simd_level::avx512)),
    [](const auto& info) {
      return std::string(type_traits(std::get<0>(info.param)).name) + "_" + to_string(std::get<1>(info.param));
    });

INSTANTIATE_TEST_SUITE_P(
    quantized_types, vec_dot_packed_q_test,
    ::testing::Combine(::testing::Values(ggml_type::q4_0, ggml_type::q4_1, ggml_type::q8_0),
                       ::testing::Values(simd_level::avx2, simd_level::avx2_vnni, simd_level::avx512)),
    [](const auto& info) {
      return std::string(type_traits(std::get<0>(info.param)).name) + "_" + to_string(std::get<1>(info.param));
    });

// gemm over n_w weight rows x n_x activation rows (tile multiples and edges) gives each element's
// dot bit for bit.
TEST_P(vec_dot_test, gemm_rows_equals_dot_per_element) {
  const auto [t, level] = GetParam();
  if (const char* why = missing(level)) GTEST_SKIP() << why;
  const auto kern = select_dot_kernel(t, level);
  ASSERT_NE(kern.gemm, nullptr);
  for (int64_t k : {int64_t{96}, int64_t{576}}) {
    const size_t w_stride = row_bytes(type_traits(t), k) + 4;
    for (auto [nw, nx] : {std::pair<int64_t, int64_t>{4, 4}, {8, 2}, {5, 7}, {9, 16}, {1, 1}, {3, 5}}) {
      std::vector<uint8_t> w(w_stride * nw);
      for (int64_t i = 0; i < nw; ++i) {
        auto r = make_row(t, k, 5 * i + k);
        std::copy(r.wq.begin(), r.wq.end(), w.begin() + i * w_stride);
      }
      // Activation rows in the kernel's format, padded apart.
      const size_t x_bytes = kern.act == act_format::q8x ? k / 32 * sizeof(block_q8x) : k * sizeof(float);
      const size_t x_stride = x_bytes + 40;
      std::vector<uint8_t> x(x_stride * nx);
      for (int64_t j = 0; j < nx; ++j) {
        auto r = make_row(t, k, 900 + j);
        const void* src = act_of(kern, r);
        std::memcpy(x.data() + j * x_stride, src, x_bytes);
      }
      const int64_t ldy = nw + 3;
      std::vector<float> y(ldy * nx, -1.f);
      kern.gemm(k, w.data(), w_stride, nw, x.data(), x_stride, nx, y.data(), ldy);
      for (int64_t j = 0; j < nx; ++j) {
        for (int64_t i = 0; i < nw; ++i) {
          ASSERT_EQ(y[j * ldy + i], kern.dot(k, w.data() + i * w_stride, x.data() + j * x_stride))
              << "k=" << k << " " << nw << "x" << nx << " element " << i << "," << j;
        }
        for (int64_t i = nw; i < ldy; ++i) ASSERT_EQ(y[j * ldy + i], -1.f) << "wrote outside the block";
      }
    }
  }
}

// The packed layout: same bytes as the rows, tail rows unchanged, and packed_gemm (from any group
// start, rows ending inside the tail) matches the reference within the SIMD tolerance.
TEST_P(vec_dot_packed_test, packed_gemm_matches_scalar_reference) {
  const auto [t, level] = GetParam();
  if (const char* why = missing(level)) GTEST_SKIP() << why;
  const auto kern = select_dot_kernel(t, level);
  ASSERT_EQ(kern.level, level);
  ASSERT_NE(kern.pack, nullptr) << "no packed layout for " << type_traits(t).name << " on " << to_string(level);
  ASSERT_NE(kern.packed_gemm, nullptr);
  const auto ref_k = select_dot_kernel(t, simd_level::scalar);
  for (int64_t k : {int64_t{32}, int64_t{96}, int64_t{576}}) {
    const size_t rb = row_bytes(type_traits(t), k);
    for (int64_t n : {16, 37, 5, 48}) {
      std::vector<uint8_t> w(rb * n);
      std::vector<row_data> rows;
      for (int64_t i = 0; i < n; ++i) {
        rows.push_back(make_row(t, k, 11 * i + k));
        std::copy(rows.back().wq.begin(), rows.back().wq.end(), w.begin() + i * rb);
      }
      std::vector<uint8_t> packed(rb * n, 0xcd);
      kern.pack(w.data(), rb, n, k, packed.data());
      const int64_t n_packed = n / packed_group_rows * packed_group_rows;
      EXPECT_TRUE(std::equal(w.begin() + n_packed * rb, w.end(), packed.begin() + n_packed * rb)) << "tail rows changed";
      for (int64_t nx : {1, 2, 3, 4, 5, 8, 9, 17}) {  // every tile size of both paths
        // Activations in the kernel's format: int8 blocks for quantized weights, floats otherwise.
        std::vector<row_data> xs;
        const bool q8x = kern.act == act_format::q8x;
        const size_t x_stride = q8x ? k / 32 * sizeof(block_q8x) : k * sizeof(float);
        std::vector<uint8_t> x(x_stride * nx);
        for (int64_t j = 0; j < nx; ++j) {
          xs.push_back(make_row(t, k, 500 + j));
          if (q8x)
            std::memcpy(x.data() + j * x_stride, xs.back().xq.data(), x_stride);
          else
            std::memcpy(x.data() + j * x_stride, xs.back().x.data(), x_stride);
        }
        for (int64_t first : {int64_t{0}, int64_t{16}}) {
          if (first >= n || (first > 0 && first >= n_packed)) continue;
          const int64_t rows_here = n - first;
          const int64_t ldy = rows_here + 2;
          std::vector<float> y(ldy * nx, -1.f);
          kern.packed_gemm(k, packed.data() + first * rb, rows_here, x.data(), x_stride, nx, y.data(), ldy);
          for (int64_t j = 0; j < nx; ++j) {
            for (int64_t i = 0; i < rows_here; ++i) {
              double abs_sum = 0;
              for (int64_t e = 0; e < k; ++e) abs_sum += std::fabs(double(rows[first + i].w[e]) * xs[j].x[e]);
              const float want = ref_k.dot(k, w.data() + (first + i) * rb, x.data() + j * x_stride);
              EXPECT_NEAR(y[j * ldy + i], want, simd_vs_ref_rel_tolerance * abs_sum + 1e-6)
                  << "k=" << k << " n=" << n << " nx=" << nx << " first=" << first << " element " << i << "," << j;
            }
            for (int64_t i = rows_here; i < ldy; ++i) ASSERT_EQ(y[j * ldy + i], -1.f) << "wrote outside the block";
          }
        }
      }
    }
  }
}

// Extreme codes through the packed products: every weight code at its largest magnitude (q4
// nibbles all 15 or all 0, q8_0 all 127 / -127 / -128) against activations all +-127 with unit
// scales. The integer sums are then at their limits (a q4 block's int16 sum reaches 30480 on
// AVX2), so any saturation or lost sign shows as a wrong total; the expected value is exact.
TEST_P(vec_dot_packed_q_test, packed_gemm_is_exact_at_the_extreme_codes) {
  const auto [t, level] = GetParam();
  if (const char* why = missing(level)) GTEST_SKIP() << why;
  const auto kern = select_dot_kernel(t, level);
  ASSERT_NE(kern.pack, nullptr) << "no packed layout for " << type_traits(t).name << " on " << to_string(level);
  ASSERT_EQ(kern.act, act_format::q8x);
  const auto ref_k = select_dot_kernel(t, simd_level::scalar);
  const int64_t k = 256, n = 16, nb = k / 32;
  const size_t rb = row_bytes(type_traits(t), k);
  const uint16_t one = 0x3c00;  // fp16 1.0
  std::vector<uint8_t> w(rb * n);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* blk = w.data() + r * rb + b * (rb / nb);
      const int code = static_cast<int>((r + b) % 4);  // q4: 0xff, 0x00, 0xf0, 0x0f; q8_0: 127, -127, -128, 1
      if (t == ggml_type::q8_0) {
        auto* q = reinterpret_cast<block_q8_0*>(blk);
        q->d = one;
        std::fill(std::begin(q->qs), std::end(q->qs), static_cast<int8_t>(code == 0 ? 127 : code == 1 ? -127 : code == 2 ? -128 : 1));
      } else {
        uint8_t* qs = t == ggml_type::q4_0 ? reinterpret_cast<block_q4_0*>(blk)->qs : reinterpret_cast<block_q4_1*>(blk)->qs;
        std::memcpy(blk, &one, 2);
        if (t == ggml_type::q4_1) std::memcpy(blk + 2, &one, 2);
        std::fill(qs, qs + 16, static_cast<uint8_t>(code == 0 ? 0xff : code == 1 ? 0x00 : code == 2 ? 0xf0 : 0x0f));
      }
    }
  }
  std::vector<uint8_t> packed(rb * n);
  kern.pack(w.data(), rb, n, k, packed.data());
  const int64_t nx = 4;
  std::vector<block_q8x> x(nx * nb);
  for (int64_t j = 0; j < nx; ++j) {
    for (int64_t b = 0; b < nb; ++b) {
      block_q8x& xb = x[j * nb + b];
      xb.d = 1.f;
      const int8_t v = (j + b) % 2 ? -127 : 127;
      std::fill(std::begin(xb.qs), std::end(xb.qs), v);
      xb.sum = 32 * v;
    }
  }
  const size_t xs = nb * sizeof(block_q8x);
  std::vector<float> y(n * nx, 0.f);
  kern.packed_gemm(k, packed.data(), n, x.data(), xs, nx, y.data(), n);
  for (int64_t j = 0; j < nx; ++j)
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(y[j * n + i], ref_k.dot(k, w.data() + i * rb, x.data() + j * nb)) << "row " << i << " x " << j;
}

// 256-bit vpdpbusd in both encodings against AVX2's vpmaddubsw tiles: the same integer sums, so
// bit for bit, for every tile size (1-17 activation rows), whole groups and a tail, random codes and
// the extreme ones (all nibbles 15, q8_0 -128 against activations of -127 / 127).
class vnni_packed_test : public ::testing::TestWithParam<std::tuple<ggml_type, avx2::vnni_encoding>> {};

TEST_P(vnni_packed_test, equals_the_avx2_tiles_bit_for_bit) {
  const auto [t, encoding] = GetParam();
  const auto& f = host_features();
  if (encoding == avx2::vnni_encoding::vex && !(f.has_avx2() && f.avx_vnni))
    GTEST_SKIP() << "host has no AVX-VNNI (the VEX encoding); its EVEX twin runs on AVX-512 VNNI hosts";
  if (encoding == avx2::vnni_encoding::evex && !f.has_avx512_vnni())
    GTEST_SKIP() << "host has no AVX-512 VNNI + VL (the EVEX encoding)";
  const auto vnni = avx2::vnni_packed_layout_for(t, encoding);
  const auto base = avx2::packed_layout_for(t);
  ASSERT_NE(vnni.gemm, nullptr);
  ASSERT_EQ(vnni.pack, base.pack);
  EXPECT_EQ(avx2::vnni_packed_layout_for(ggml_type::f16, encoding).gemm, nullptr);
  std::mt19937_64 rng(7);
  for (int64_t k : {int64_t{32}, int64_t{576}}) {
    const int64_t nb = k / 32;
    const size_t rb = row_bytes(type_traits(t), k);
    for (int64_t n : {16, 37}) {
      for (bool extreme : {false, true}) {
        std::vector<uint8_t> w(rb * n);
        for (auto& b : w) b = extreme ? (t == ggml_type::q8_0 ? 0x80 : 0xff) : static_cast<uint8_t>(rng());
        for (int64_t r = 0; r < n; ++r)  // finite fp16 scales (and q4_1 mins) in each block
          for (int64_t b = 0; b < nb; ++b) {
            uint8_t* blk = w.data() + r * rb + b * (rb / nb);
            const uint16_t h = static_cast<uint16_t>(0x2c00 | (rng() & 0x3ff));
            std::memcpy(blk, &h, 2);
            if (t == ggml_type::q4_1) std::memcpy(blk + 2, &h, 2);
          }
        std::vector<uint8_t> packed(rb * n);
        base.pack(w.data(), rb, n, k, packed.data());
        for (int64_t nx : {1, 2, 3, 4, 5, 9, 17}) {
          std::vector<block_q8x> x(nx * nb);
          for (auto& xb : x) {
            xb.d = 0.01f + static_cast<float>(rng() % 100) / 1000.f;
            int sum = 0;
            for (auto& q : xb.qs) sum += q = extreme ? static_cast<int8_t>(rng() % 2 ? 127 : -127)
                                                     : static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
            xb.sum = sum;
          }
          const size_t xs = nb * sizeof(block_q8x);
          std::vector<float> want(n * nx, -1.f), got(n * nx, -2.f);
          base.gemm(k, packed.data(), n, x.data(), xs, nx, want.data(), n);
          vnni.gemm(k, packed.data(), n, x.data(), xs, nx, got.data(), n);
          for (int64_t i = 0; i < n * nx; ++i)
            ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
                << "k=" << k << " n=" << n << " nx=" << nx << " extreme=" << extreme << " element " << i << ": "
                << got[i] << " vs " << want[i];
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    quantized_types, vnni_packed_test,
    ::testing::Combine(::testing::Values(ggml_type::q4_0, ggml_type::q4_1, ggml_type::q8_0),
                       ::testing::Values(avx2::vnni_encoding::vex, avx2::vnni_encoding::evex)),
    [](const auto& info) {
      return std::string(type_traits(std::get<0>(info.param)).name) +
             (std::get<1>(info.param) == avx2::vnni_encoding::vex ? "_vex" : "_evex");
    });

class vec_dot_ref_test : public ::testing::TestWithParam<ggml_type> {};

TEST_P(vec_dot_ref_test, matches_float_dot_of_dequantized_weights) {
  const ggml_type t = GetParam();
  const int64_t k = 576;
  auto r = make_row(t, k, 7);
  double exact = 0;
  for (int64_t i = 0; i < k; ++i) exact += double(r.w[i]) * r.x[i];
  const auto kern = select_dot_kernel(t, simd_level::scalar);
  const double tol = kern.act == act_format::q8x ? int8_rounding_bound(r) * int8_bound_slack + 1e-4 : 1e-6 * r.abs_sum;
  EXPECT_NEAR(kern.dot(k, r.wq.data(), act_of(kern, r)), exact, tol);
}

INSTANTIATE_TEST_SUITE_P(all_types, vec_dot_ref_test,
                         ::testing::Values(ggml_type::f32, ggml_type::f16, ggml_type::bf16,
                                           ggml_type::q4_0, ggml_type::q4_1, ggml_type::q8_0),
                         [](const auto& info) { return std::string(type_traits(info.param).name); });

// Inputs that stress the quantizer: normal data, zeros, an all-zero block, exact .5 ties, values
// whose scale is an fp16 subnormal, and large magnitudes.
std::vector<float> quantizer_input() {
  std::mt19937_64 rng(3);
  std::normal_distribution<float> nd(0.f, 3.f);
  std::vector<float> x(32 * 69);  // 4 groups of 16 blocks (the AVX-512 path's unit) and a tail of 5
  for (auto& v : x) v = nd(rng);
  x[5] = 0.f;
  std::fill(x.begin() + 64, x.begin() + 96, 0.f);  // an all-zero block (block 2)
  for (int i = 0; i < 32; ++i) x[96 + i] = (i - 16) + 0.5f;  // ties once scaled by ~1
  x[96] = 127.f;
  for (int i = 0; i < 32; ++i) x[128 + i] = 1e-6f * (i - 13);  // d is an fp16 subnormal
  for (int i = 0; i < 32; ++i) x[160 + i] = 6e4f * std::sin(float(i));
  for (int i = 0; i < 32; ++i) x[192 + i] = -1.f;  // all equal: every q is -127
  std::fill(x.begin() + 32 * 66, x.begin() + 32 * 67, 0.f);  // an all-zero block in the tail
  return x;
}

class quantize_q8x_test : public ::testing::TestWithParam<simd_level> {};

TEST_P(quantize_q8x_test, matches_reference_bit_for_bit) {
  const simd_level level = GetParam();
  if (const char* why = missing(level)) GTEST_SKIP() << why;
  const auto quant = select_dot_kernel(ggml_type::q8_0, level).quantize;
  const auto x = quantizer_input();
  std::vector<block_q8x> a(x.size() / 32), b(x.size() / 32);
  ref::quantize_q8x(x.data(), a.data(), x.size());
  quant(x.data(), b.data(), x.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].d, b[i].d) << i;
    EXPECT_EQ(a[i].sum, b[i].sum) << i;
    for (int j = 0; j < 32; ++j) ASSERT_EQ(a[i].qs[j], b[i].qs[j]) << i << "," << j;
  }
  EXPECT_EQ(a[2].d, 0.f);
  EXPECT_EQ(a[6].sum, -127 * 32);
  EXPECT_EQ(a[66].d, 0.f);
}

INSTANTIATE_TEST_SUITE_P(simd_paths, quantize_q8x_test,
                         ::testing::Values(simd_level::avx2, simd_level::avx512),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(select_dot_kernel, honours_the_level_cap) {
  EXPECT_EQ(select_dot_kernel(ggml_type::q4_1, simd_level::scalar).level, simd_level::scalar);
  if (host_features().has_avx2()) {
    EXPECT_EQ(select_dot_kernel(ggml_type::q4_1, simd_level::avx2).level, simd_level::avx2);
  }
  if (host_features().has_avx2_vnni()) {
    const auto k = select_dot_kernel(ggml_type::q4_0, simd_level::avx2_vnni);
    EXPECT_EQ(k.level, simd_level::avx2_vnni);
    EXPECT_NE(k.packed_gemm, select_dot_kernel(ggml_type::q4_0, simd_level::avx2).packed_gemm) << "no vpdpbusd tiles";
  }
  if (host_features().has_avx512_vnni()) {
    EXPECT_EQ(select_dot_kernel(ggml_type::q8_0, simd_level::avx512).level, simd_level::avx512);
  }
  EXPECT_EQ(select_dot_kernel(ggml_type::q4_1, simd_level::scalar).act, act_format::q8x);
  EXPECT_EQ(select_dot_kernel(ggml_type::f16, simd_level::scalar).act, act_format::f32);
}

TEST(select_dot_kernel, never_returns_a_path_the_host_lacks) {
  const auto k = select_dot_kernel(ggml_type::q4_0, simd_level::avx512);
  if (!host_features().has_avx512_vnni()) {
    EXPECT_LT(k.level, simd_level::avx512);
  }
  if (!host_features().has_avx2()) {
    EXPECT_EQ(k.level, simd_level::scalar);
  }
  EXPECT_NE(k.gemv, nullptr);
}

// The vendor CPUID reports (what the small-tile prefetch choice follows) agrees with the kernel's
// view in /proc/cpuinfo, and the choice is the vendor's unless FW_PREFETCH_SMALL_TILES overrides it.
TEST(cpu_features, small_tile_prefetch_follows_the_vendor) {
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("vendor_id", 0) != 0) continue;
    EXPECT_EQ(host_features().intel, line.find("GenuineIntel") != std::string::npos) << line;
    break;
  }
  const char* env = std::getenv("FW_PREFETCH_SMALL_TILES");
  if (env == nullptr) {
    EXPECT_EQ(prefetch_small_tiles(), host_features().intel);
  } else if (std::string(env) == "1") {
    EXPECT_TRUE(prefetch_small_tiles());
  } else if (std::string(env) == "0") {
    EXPECT_FALSE(prefetch_small_tiles());
  }
}

}  // namespace
}  // namespace fw::cpu
