// Tests for the scalar reference conversions and quantizers in kernels/cpu/quant_ref.
#include "kernels/format/quant_ref.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace fw {
namespace {

TEST(quant_ref, fp16_known_values) {
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(fp32_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(fp32_to_fp16(0.5f), 0x3800);
  EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(0.1f), 0x2e66);
  EXPECT_EQ(fp32_to_fp16(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);  // largest finite
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);  // halfway to 65536: ties to even -> inf
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (zero)
  EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -26)), 0x0001);  // 0.75 ulp rounds up
  EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp: tie -> even (2)
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);      // tie -> even (up)
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11) + 1e-7f), 0x3c01);  // above tie
  EXPECT_EQ(fp32_to_fp16(std::ldexp(2047.0f, -25)), 0x0400);  // subnormal rounding into normal
  const uint16_t nan = fp32_to_fp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);

  EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_fp32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_fp32(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::isinf(fp16_to_fp32(0x7c00)));
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7e00)));
  EXPECT_TRUE(std::signbit(fp16_to_fp32(0x8000)));
}

TEST(quant_ref, fp16_round_trips_every_value) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(f))));
      continue;
    }
    ASSERT_EQ(fp32_to_fp16(f), h) << "h=" << h;
  }
}

#if defined(__FLT16_MAX__) && (defined(__x86_64__) || defined(__aarch64__))
TEST(quant_ref, fp16_matches_compiler_conversion) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(f)) continue;
    const auto want = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
    ASSERT_EQ(fp32_to_fp16(f), want) << "f=" << f;
  }
}
#endif

TEST(quant_ref, bf16_known_values) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(fp32_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie -> even (down)
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);  // above tie
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // max float rounds to inf
  EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(std::bit_cast<float>(0x7f800001u)))));
  EXPECT_EQ(bf16_to_fp32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_fp32(0x4049), 3.140625f);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_fp32(static_cast<uint16_t>(h));
    if (!std::isnan(f)) {
      ASSERT_EQ(fp32_to_bf16(f), h);
    }
  }
}

std::vector<float> random_row(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> round_trip(ggml_type t, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(row_bytes(type_traits(t), x.size()));
  quantize_row_ref(t, x.data(), q.data(), n);
  std::vector<float> y(x.size());
  dequantize_row_ref(t, q.data(), y.data(), n);
  return y;
}

TEST(quant_ref, float_formats_round_trip_within_bound) {
  const auto x = random_row(4096, 1, 3.0f);
  EXPECT_EQ(round_trip(ggml_type::f32, x), x);
  const auto h = round_trip(ggml_type::f16, x);
  const auto b = round_trip(ggml_type::bf16, x);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(std::fabs(h[i] - x[i]), std::fabs(x[i]) * 0x1.0p-11f + 0x1.0p-25f) << i;
    EXPECT_LE(std::fabs(b[i] - x[i]), std::fabs(x[i]) * 0x1.0p-8f) << i;
  }
}

// Per-block error bounds: half a quantization step (a full step at the clamped q4_0 edge), plus
// the fp16 rounding of the scale and minimum.
TEST(quant_ref, block_formats_round_trip_within_bound) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const auto x = random_row(32 * 64, seed, seed == 3 ? 100.0f : 1.0f);
    const auto y8 = round_trip(ggml_type::q8_0, x);
    const auto y40 = round_trip(ggml_type::q4_0, x);
    const auto y41 = round_trip(ggml_type::q4_1, x);
    for (size_t blk = 0; blk < x.size() / 32; ++blk) {
      float amax = 0, mn = x[blk * 32], mx = x[blk * 32];
      for (size_t j = blk * 32; j < blk * 32 + 32; ++j) {
        amax = std::max(amax, std::fabs(x[j]));
        mn = std::min(mn, x[j]);
        mx = std::max(mx, x[j]);
      }
      for (size_t j = blk * 32; j < blk * 32 + 32; ++j) {
        EXPECT_LE(std::fabs(y8[j] - x[j]), amax * (0.5f / 127 + 0x1.0p-10f)) << j;
        EXPECT_LE(std::fabs(y40[j] - x[j]), amax * (1.0f / 8 + 0x1.0p-9f)) << j;
        EXPECT_LE(std::fabs(y41[j] - x[j]),
                  (mx - mn) * (0.5f / 15 + 0x1.0p-9f) + std::fabs(mn) * 0x1.0p-10f) << j;
      }
    }
  }
}

TEST(quant_ref, q4_0_matches_ggml_reference_layout) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);  // max |x| is -16
  block_q4_0 q{};
  quantize_row_ref(ggml_type::q4_0, x, &q, 32);
  EXPECT_EQ(q.d, 0x4000);  // d = -16 / -8 = 2
  EXPECT_EQ(q.qs[0], 0x80);  // element 0 -> 0 (low), element 16 -> 8 (high)
  EXPECT_EQ(q.qs[15], 0xf8);  // element 15 = -1 -> 8; element 31 = 15 -> 16, clamped to 15
  float y[32];
  dequantize_row_ref(ggml_type::q4_0, &q, y, 32);
  EXPECT_EQ(y[0], -16.0f);
  EXPECT_EQ(y[16], 0.0f);
  EXPECT_EQ(y[31], 14.0f);  // 15 / 2 + 8.5 = 16 clamps to 15 -> (15 - 8) * 2

  // Hand-built block: element j = j - 8, element j + 16 = 7 - j.
  block_q4_0 h{};
  h.d = 0x3c00;
  for (int j = 0; j < 16; ++j) h.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  dequantize_row_ref(ggml_type::q4_0, &h, y, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], static_cast<float>(j - 8));
    EXPECT_EQ(y[j + 16], static_cast<float>(7 - j));
  }
}

TEST(quant_ref, q4_0_keeps_sign_of_largest_value) {
  float x[32] = {};
  x[3] = 16.0f;
  x[4] = -8.0f;
  block_q4_0 q{};
  quantize_row_ref(ggml_type::q4_0, x, &q, 32);
  EXPECT_EQ(q.d, 0xc000);  // d = 16 / -8 = -2
  float y[32];
  dequantize_row_ref(ggml_type::q4_0, &q, y, 32);
  EXPECT_EQ(y[3], 16.0f);
  EXPECT_EQ(y[4], -8.0f);
  EXPECT_EQ(y[0], 0.0f);
}

TEST(quant_ref, q4_1_and_q8_0_known_blocks) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j) * 0.5f + 1.0f;  // 1 .. 16.5
  block_q4_1 q1{};
  quantize_row_ref(ggml_type::q4_1, x, &q1, 32);
  EXPECT_EQ(q1.m, 0x3c00);                       // min 1.0
  EXPECT_EQ(q1.d, fp32_to_fp16(15.5f / 15.0f));  // (max - min) / 15
  EXPECT_EQ(q1.qs[0] & 0x0f, 0);
  EXPECT_EQ(q1.qs[15] >> 4, 15);
  float y[32];
  dequantize_row_ref(ggml_type::q4_1, &q1, y, 32);
  EXPECT_EQ(y[0], 1.0f);

  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16) * 0.25f;  // amax 4
  block_q8_0 q8{};
  quantize_row_ref(ggml_type::q8_0, x, &q8, 32);
  EXPECT_EQ(q8.d, fp32_to_fp16(4.0f / 127.0f));
  EXPECT_EQ(q8.qs[0], -127);
  EXPECT_EQ(q8.qs[16], 0);
  dequantize_row_ref(ggml_type::q8_0, &q8, y, 32);
  EXPECT_NEAR(y[0], -4.0f, 4.0f / 127 * 0x1.0p-10f * 127);
}

TEST(quant_ref, zero_blocks_stay_zero) {
  const std::vector<float> x(64, 0.0f);
  for (ggml_type t : {ggml_type::q8_0, ggml_type::q4_0, ggml_type::q4_1}) {
    for (float v : round_trip(t, x)) EXPECT_EQ(v, 0.0f);
  }
}

}  // namespace
}  // namespace fw
