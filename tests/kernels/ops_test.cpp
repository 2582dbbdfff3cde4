// The AVX2 and AVX-512 element-wise ops against the scalar reference (fw::cpu::ref) on random data of
// lengths that exercise the tails, with a named tolerance per op; the vector exp at the
// edges of the float range; softmax with -inf scores; rope's invariants; and the public
// (dispatched) functions against the reference on whatever path this host picks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/ops.hpp"

namespace fw::cpu {
namespace {

// exp512 is a polynomial, not libm: about 1 ulp from std::exp, allowed 2e-6 relative.
constexpr double exp_rel_tolerance = 2e-6;
// silu adds a division and a product to exp's error.
constexpr double silu_rel_tolerance = 1e-5;
// rms_norm sums squares in float vector lanes, the reference in double.
constexpr double rms_norm_rel_tolerance = 1e-5;
// softmax sums in float vector lanes, the reference in double.
constexpr double softmax_rel_tolerance = 1e-5;
// rope applies the reference's own cos / sin table with the same roundings: near-exact.
constexpr double rope_rel_tolerance = 1e-6;
// Subnormal results carry only absolute precision: a couple of the smallest steps.
constexpr double subnormal_abs_tolerance = 2.0 * std::numeric_limits<float>::denorm_min();

// Lengths around the 16-lane vector and the unrolled steps (32, 64), plus the model's widths.
const std::vector<int64_t> lengths = {1, 2, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 576, 1000, 1541};

const char* missing_avx512() {
  return host_features().has_avx512() ? nullptr : "host has no AVX-512 F/BW/VL";
}

/// One vector path's element-wise ops (each tested against the reference on every host that
/// runs it: AVX2 runs on AVX-512 hosts too).
struct vector_ops {
  const char* name;
  const char* (*missing)();
  decltype(&ref::silu_mul) silu_mul;
  decltype(&ref::rms_norm) rms_norm;
  decltype(&ref::add_inplace) add_inplace;
  decltype(&ref::softmax) softmax;
  decltype(&ref::softmax) exp_inplace;
  decltype(&ref::fp32_to_fp16_row) fp32_to_fp16_row;
};

const vector_ops avx2_ops = {"avx2", [] { return host_features().has_avx2() ? nullptr : "host has no AVX2/FMA/F16C"; },
                             avx2::silu_mul, avx2::rms_norm, avx2::add_inplace, avx2::softmax, avx2::exp_inplace,
                             avx2::fp32_to_fp16_row};
const vector_ops avx512_ops = {"avx512", missing_avx512, avx512::silu_mul, avx512::rms_norm, avx512::add_inplace,
                               avx512::softmax, avx512::exp_inplace, avx512::fp32_to_fp16_row};

class vector_ops_test : public ::testing::TestWithParam<const vector_ops*> {};

std::vector<float> random_floats(int64_t n, float sigma, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = nd(rng);
  return v;
}

// got[i] within rel * |want[i]| (+ the subnormal floor) for every i; -inf/+inf/NaN must match.
::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& want, double rel) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got[i], w = want[i];
    if (std::isnan(w) || std::isnan(g)) {
      if (std::isnan(w) && std::isnan(g)) continue;
      return ::testing::AssertionFailure() << "at " << i << " of " << want.size() << ": got " << g << ", want " << w;
    }
    if (std::isinf(w) || std::isinf(g)) {
      if (g == w) continue;
      return ::testing::AssertionFailure() << "at " << i << " of " << want.size() << ": got " << g << ", want " << w;
    }
    if (std::fabs(g - w) > rel * std::fabs(w) + subnormal_abs_tolerance)
      return ::testing::AssertionFailure() << "at " << i << " of " << want.size() << ": got " << g << ", want " << w
                                           << " (rel err " << std::fabs(g - w) / std::fabs(w) << ")";
  }
  return ::testing::AssertionSuccess();
}

std::vector<float> std_exp(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = std::exp(x[i]);
  return y;
}

// -- the vector exp --

TEST_P(vector_ops_test, exp_matches_std_exp_over_the_float_range) {
  const vector_ops& path = *GetParam();
  if (const char* why = path.missing()) GTEST_SKIP() << why;
  // Dense sweep of [-104, 89]: normal results, subnormal results (x < -87.3), overflow (x > 88.72).
  std::vector<float> x;
  for (double v = -104.0; v <= 89.0; v += 0.0137) x.push_back(static_cast<float>(v));
  for (float v : random_floats(4099, 3.0f, 1)) x.push_back(v);  // the softmax / silu range
  std::vector<float> y = x;
  path.exp_inplace(y.data(), static_cast<int64_t>(y.size()));
  EXPECT_TRUE(all_close(y, std_exp(x), exp_rel_tolerance));
}

TEST_P(vector_ops_test, exp_at_extreme_inputs) {
  const vector_ops& path = *GetParam();
  if (const char* why = path.missing()) GTEST_SKIP() << why;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {-inf, -1e30f, -1000.f, -150.f, -104.f, -103.9f, -100.f, -87.5f, -87.3f, -0.f,
                          0.f,  1e-30f, 1.f,     88.f,   88.7f,  89.f,    100.f,  1e30f,  inf};
  std::vector<float> y = x;
  path.exp_inplace(y.data(), static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_FALSE(std::isnan(y[i])) << "exp(" << x[i] << ")";
  for (size_t i = 0; i <= 4; ++i) EXPECT_EQ(y[i], 0.0f) << "exp(" << x[i] << ") underflows to 0";
  EXPECT_EQ(y[9], 1.0f) << "exp(-0) is exactly 1";
  EXPECT_EQ(y[10], 1.0f) << "exp(0) is exactly 1";
  for (size_t i = 15; i < x.size(); ++i) EXPECT_EQ(y[i], inf) << "exp(" << x[i] << ") overflows to +inf";
  EXPECT_TRUE(all_close(y, std_exp(x), exp_rel_tolerance));

  std::vector<float> nan = {std::numeric_limits<float>::quiet_NaN()};
  path.exp_inplace(nan.data(), 1);
  EXPECT_TRUE(std::isnan(nan[0])) << "NaN propagates";
}

// -- silu_mul, rms_norm, add_inplace --

TEST_P(vector_ops_test, silu_mul_matches_reference) {
  const vector_ops& path = *GetParam();
  if (const char* why = path.missing()) GTEST_SKIP() << why;
  for (int64_t n : lengths) {
    std::vector<float> gate = random_floats(n, 4.0f, 10 + n), up = random_floats(n, 1.0f, 20 + n);
    // Saturated gates: e^-g overflows (g -> -0 * up) or vanishes (g -> g * up).
    gate[0] = -100.f;
    if (n > 1) gate[n - 1] = 100.f;
    std::vector<float> want = gate, got = gate;
    ref::silu_mul(want.data(), up.data(), n);
    path.silu_mul(got.data(), up.data(), n);
    EXPECT_TRUE(all_close(got, want, silu_rel_tolerance)) << "n = " << n;
  }
}

TEST_P(vector_ops_test, rms_norm_matches_reference_and_may_alias) {
  const vector_ops& path = *GetParam();
  if (const char* why = path.missing()) GTEST_SKIP() << why;
  for (int64_t n : lengths) {
    const std::vector<float> x = random_floats(n, 2.0f, 30 + n), w = random_floats(n, 1.0f, 40 + n);
    std::vector<float> want(n), got(n);
    ref::rms_norm(x.data(), w.data(), want.data(), n, 1e-5f);
    path.rms_norm(x.data(), w.data(), got.data(), n, 1e-5f);
    EXPECT_TRUE(all_close(got, want, rms_norm_rel_tolerance)) << "n = " << n;
    std::vector<float> in_place = x;
    path.rms_norm(in_place.data(), w.data(), in_place.data(), n, 1e-5f);
    EXPECT_EQ(in_place, got) << "y aliasing x, n = " << n;
  }
}

TEST_P(vector_ops_test, add_inplace_is_exact) {
  const vector_ops& path = *GetParam();
  if (const char* why = path.missing()) GTEST_SKIP() << why;
  for (int64_t n : lengths) {
    const std::vector<float> x = random_floats(n, 1.0f, 50 + n), y0 = random_floats(n, 1.0f, 60 + n);
    std::vector<float> want = y0, got = y0;
    ref::add_inplace(want.data(), x.data(), n);
    path.add_inplace(got.data(), x.data(), n);
    EXPECT_EQ(got, want) << "n = " << n;
  }
}

// -- softmax --

TEST_P(vector_ops_test, softmax_matches_reference_with_minus_inf_entries) {
  const vector_ops& path = *GetParam();
  if (const char* why = path.missing()) GTEST_SKIP() << why;
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t n : lengths) {
    std::vector<float> x = random_floats(n, 5.0f, 70 + n);
    for (int64_t i = 1; i < n; i += 3) x[i] = -inf;  // masked positions (never the first)
    std::vector<float> want = x, got = x;
    ref::softmax(want.data(), n);
    path.softmax(got.data(), n);
    EXPECT_TRUE(all_close(got, want, softmax_rel_tolerance)) << "n = " << n;
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (std::isinf(x[i])) {
        EXPECT_EQ(got[i], 0.0f) << "-inf scores get exactly 0, i = " << i;
      }
      sum += got[i];
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "n = " << n;
  }
}

TEST_P(vector_ops_test, softmax_of_one_finite_score_is_one_hot) {
  const vector_ops& path = *GetParam();
  if (const char* why = path.missing()) GTEST_SKIP() << why;
  for (int64_t n : lengths) {
    std::vector<float> x(n, -std::numeric_limits<float>::infinity());
    x[n / 2] = 3.5f;
    path.softmax(x.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(x[i], i == n / 2 ? 1.0f : 0.0f) << "n = " << n << ", i = " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(paths, vector_ops_test, ::testing::Values(&avx2_ops, &avx512_ops),
                         [](const auto& info) { return std::string(info.param->name); });

// -- rope --

struct rope_case {
  int n_head, head_dim, n_rot;
  float freq_base, freq_scale;
};

// Full rotation of 64 / 128-wide heads, partial rotation (dims past n_rot untouched), and widths
// that are not a multiple of 16 (masked tail of the table).
const std::vector<rope_case> rope_cases = {
    {9, 64, 64, 10000.f, 1.f}, {3, 64, 64, 10000.f, 1.f}, {2, 128, 128, 500000.f, 1.f},
    {4, 80, 32, 10000.f, 0.25f}, {3, 24, 24, 10000.f, 1.f}, {5, 40, 6, 10000.f, 1.f},
};
const std::vector<int> rope_positions = {0, 1, 2, 17, 511, 1000, 32767};

// Per head: |got - want| within tol * the head's largest |want|.
::testing::AssertionResult heads_close(const std::vector<float>& got, const std::vector<float>& want, int head_dim,
                                       double tol) {
  for (size_t h0 = 0; h0 < want.size(); h0 += head_dim) {
    double mx = 0;
    for (int j = 0; j < head_dim; ++j) mx = std::max(mx, std::fabs(double(want[h0 + j])));
    for (int j = 0; j < head_dim; ++j)
      if (std::fabs(double(got[h0 + j]) - want[h0 + j]) > tol * mx)
        return ::testing::AssertionFailure() << "at " << h0 + j << ": got " << got[h0 + j]
                                             << ", want " << want[h0 + j];
  }
  return ::testing::AssertionSuccess();
}

TEST(ops_test, avx512_rope_matches_reference) {
  if (const char* why = missing_avx512()) GTEST_SKIP() << why;
  for (const auto& c : rope_cases) {
    for (int pos : rope_positions) {
      const std::vector<float> x = random_floats(int64_t(c.n_head) * c.head_dim, 1.0f, 80 + pos);
      std::vector<float> want = x, got = x;
      ref::rope_norm(want.data(), c.n_head, c.head_dim, c.n_rot, pos, c.freq_base, c.freq_scale);
      avx512::rope_norm(got.data(), c.n_head, c.head_dim, c.n_rot, pos, c.freq_base, c.freq_scale);
      EXPECT_TRUE(heads_close(got, want, c.head_dim, rope_rel_tolerance))
          << "heads " << c.n_head << " x " << c.head_dim << ", n_rot " << c.n_rot << ", pos " << pos;
    }
  }
}

// What any correct rope does, checked on the dispatched path: position 0 is the identity, dims
// past n_rot stay, each rotated pair keeps its length, and every head gets the same rotation.
TEST(ops_test, rope_is_a_per_pair_rotation_shared_by_all_heads) {
  for (const auto& c : rope_cases) {
    for (int pos : rope_positions) {
      const int hd = c.head_dim;
      const std::vector<float> head = random_floats(hd, 1.0f, 90 + pos);
      std::vector<float> x;
      for (int h = 0; h < c.n_head; ++h) x.insert(x.end(), head.begin(), head.end());
      rope_norm(x.data(), c.n_head, hd, c.n_rot, pos, c.freq_base, c.freq_scale);
      const std::string where = "head_dim " + std::to_string(hd) + ", n_rot " + std::to_string(c.n_rot) +
                                ", pos " + std::to_string(pos);
      for (int h = 1; h < c.n_head; ++h)
        EXPECT_TRUE(std::equal(x.begin() + hd * h, x.begin() + hd * (h + 1), x.begin()))
            << "head " << h << " differs from head 0, " << where;
      for (int j = c.n_rot; j < hd; ++j) EXPECT_EQ(x[j], head[j]) << "dim " << j << " past n_rot, " << where;
      for (int j = 0; j < c.n_rot; j += 2) {
        const double before = std::hypot(double(head[j]), double(head[j + 1]));
        const double after = std::hypot(double(x[j]), double(x[j + 1]));
        EXPECT_NEAR(after, before, 1e-6 * (1 + before)) << "pair " << j / 2 << ", " << where;
      }
      if (pos == 0) {
        EXPECT_TRUE(std::equal(head.begin(), head.end(), x.begin())) << "pos 0 is the identity";
      }
    }
  }
}

// -- the public (dispatched) functions --

TEST(ops_test, public_ops_match_reference_on_the_chosen_path) {
  for (int64_t n : lengths) {
    const std::vector<float> a = random_floats(n, 3.0f, 100 + n), b = random_floats(n, 1.0f, 110 + n);
    {
      std::vector<float> want = a, got = a;
      ref::silu_mul(want.data(), b.data(), n);
      silu_mul(got.data(), b.data(), n);
      EXPECT_TRUE(all_close(got, want, silu_rel_tolerance)) << "silu_mul, n = " << n;
    }
    {
      std::vector<float> want(n), got(n);
      ref::rms_norm(a.data(), b.data(), want.data(), n, 1e-6f);
      rms_norm(a.data(), b.data(), got.data(), n, 1e-6f);
      EXPECT_TRUE(all_close(got, want, rms_norm_rel_tolerance)) << "rms_norm, n = " << n;
    }
    {
      std::vector<float> want = a, got = a;
      ref::softmax(want.data(), n);
      softmax(got.data(), n);
      EXPECT_TRUE(all_close(got, want, softmax_rel_tolerance)) << "softmax, n = " << n;
    }
    {
      std::vector<float> want = a, got = a;
      ref::add_inplace(want.data(), b.data(), n);
      add_inplace(got.data(), b.data(), n);
      EXPECT_EQ(got, want) << "add_inplace, n = " << n;
    }
  }
  for (const auto& c : rope_cases) {
    const std::vector<float> x = random_floats(int64_t(c.n_head) * c.head_dim, 1.0f, 120);
    std::vector<float> want = x, got = x;
    ref::rope_norm(want.data(), c.n_head, c.head_dim, c.n_rot, 123, c.freq_base, c.freq_scale);
    rope_norm(got.data(), c.n_head, c.head_dim, c.n_rot, 123, c.freq_base, c.freq_scale);
    EXPECT_TRUE(heads_close(got, want, c.head_dim, rope_rel_tolerance)) << "rope, n_rot " << c.n_rot;
  }
}

}  // namespace
}  // namespace fw::cpu

namespace fw::cpu {
namespace {

TEST_P(vector_ops_test, fp32_to_fp16_row_matches_reference_bit_for_bit) {
  const vector_ops& path = *GetParam();
  if (const char* why = path.missing()) GTEST_SKIP() << why;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 100.f);
  for (int64_t n : {1, 7, 16, 17, 64, 100}) {
    std::vector<float> x(n);
    for (float& v : x) v = nd(rng);
    x[0] = 70000.f;  // past the half range: +inf on both paths
    std::vector<uint16_t> a(n + 1, 0xabcd), b(n + 1, 0xabcd);
    ref::fp32_to_fp16_row(x.data(), a.data(), n);
    path.fp32_to_fp16_row(x.data(), b.data(), n);
    EXPECT_EQ(a, b) << "n = " << n;  // includes the untouched sentinel past the end
  }
}

// The table path (neox pairing, Qwen2/3 and Phi-3; frequency factors, Llama 3.1) against the
// references: the same angles and products, so the same bits.
TEST(ops_test, rope_apply_matches_the_norm_and_neox_references) {
  for (const auto& c : rope_cases) {
    for (int pos : rope_positions) {
      const std::vector<float> x = random_floats(int64_t(c.n_head) * c.head_dim, 1.0f, 70 + pos);
      const rope_table table(c.n_rot, pos, c.freq_base, c.freq_scale);
      for (bool neox : {false, true}) {
        std::vector<float> want = x, got = x;
        if (neox)
          ref::rope_neox(want.data(), c.n_head, c.head_dim, c.n_rot, pos, c.freq_base, c.freq_scale);
        else
          ref::rope_norm(want.data(), c.n_head, c.head_dim, c.n_rot, pos, c.freq_base, c.freq_scale);
        rope_apply(got.data(), c.n_head, c.head_dim, c.n_rot, table.data(), neox);
        EXPECT_EQ(got, want) << (neox ? "neox" : "norm") << ", head_dim " << c.head_dim << ", pos " << pos;
      }
    }
  }
}

TEST(ops_test, rope_neox_pairs_dim_i_with_i_plus_half_and_factors_slow_the_angle) {
  // One head of 8 dims, all rotated: at pos 1 pair 0 is (x0, x4) turned by theta_0 = 1 rad.
  std::vector<float> x = {1, 0, 0, 0, 0, 0, 0, 0};
  ref::rope_neox(x.data(), 1, 8, 8, 1, 10000.f, 1.f);
  EXPECT_FLOAT_EQ(x[0], std::cos(1.f));
  EXPECT_FLOAT_EQ(x[4], std::sin(1.f));
  EXPECT_EQ(x[1], 0.f);
  // A frequency factor of 4 on pair 0 divides its angle by 4.
  const float factors[4] = {4.f, 1.f, 1.f, 1.f};
  const rope_table t(8, 1, 10000.f, 1.f, factors);
  std::vector<float> y = {1, 0, 0, 0, 0, 0, 0, 0};
  rope_apply(y.data(), 1, 8, 8, t.data(), true);
  EXPECT_FLOAT_EQ(y[0], std::cos(0.25f));
  EXPECT_FLOAT_EQ(y[4], std::sin(0.25f));
}

}  // namespace
}  // namespace fw::cpu
