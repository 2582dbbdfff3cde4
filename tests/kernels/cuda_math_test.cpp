// The per-element math of the CUDA kernels (kernels/cuda/*.hpp, FW_HD functions nvcc compiles
// for the device too), checked on the host against the references, so it is tested on every
// machine, GPU or not: half conversions, the 32-element weight decoding of every format, the
// split-K softmax merge and its entropy, the attention plan, and the KV tile addressing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cuda/attention_math.hpp"
#include "kernels/cuda/cuda_compat.hpp"
#include "kernels/cuda/mma_frag.hpp"
#include "kernels/cuda/q16_act.hpp"
#include "kernels/cuda/q8_act.hpp"
#include "kernels/cuda/w8_act.hpp"
#include "kernels/format/fw_formats.hpp"
#include "kernels/ref/fw_dot_ref.hpp"
#include "kernels/ref/vec_dot_ref.hpp"
#include "kernels/cuda/weight_chunk.hpp"
#include "kernels/format/ggml_type.hpp"
#include "kernels/format/quant_ref.hpp"
#include "tests/support/kv_test_pools.hpp"

namespace {

using fw::cuda::wfmt;

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

TEST(cuda_math_test, half_to_float_matches_the_reference_for_every_half) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float want = fw::fp16_to_fp32(static_cast<uint16_t>(h));
    const float got = fw::cuda::half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      ASSERT_EQ(bits_of(got), bits_of(want)) << "half 0x" << std::hex << h;
    }
  }
}

TEST(cuda_math_test, float_to_half_rounds_like_the_kv_cache_store) {
  std::mt19937 rng(7);
  std::vector<float> x;
  for (float f : {0.f, -0.f, 1.f, -1.f, 65504.f, 65519.f, 65520.f, 1e9f, -1e9f, 6.1035156e-05f, 6.0e-08f, 2.98e-08f,
                  2.9802322e-08f, 1e-10f, 0.333333f})
    x.push_back(f);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    float f;
    const uint32_t b = any(rng);
    std::memcpy(&f, &b, sizeof f);
    if (!std::isnan(f)) x.push_back(f);
  }
  std::vector<uint16_t> want(x.size());
  fw::cpu::ref::fp32_to_fp16_row(x.data(), want.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(fw::cuda::float_to_half(x[i]), want[i]) << "float " << x[i] << " (0x" << std::hex << bits_of(x[i]) << ")";
}

struct format_case {
  fw::ggml_type type;
  wfmt f;
};

TEST(cuda_math_test, every_weight_format_decodes_as_its_reference_conversion) {
  const format_case cases[] = {{fw::ggml_type::f32, wfmt::f32},         {fw::ggml_type::f16, wfmt::f16},
                               {fw::ggml_type::bf16, wfmt::bf16},       {fw::ggml_type::q4_0, wfmt::q4_0},
                               {fw::ggml_type::q4_1, wfmt::q4_1},       {fw::ggml_type::q8_0, wfmt::q8_0},
                               {fw::ggml_type::fw_w8a8, wfmt::w8},      {fw::ggml_type::fw_w4a16_g32, wfmt::w4g32},
                               {fw::ggml_type::fw_w4a16_g64, wfmt::w4g64}, {fw::ggml_type::fw_w4a16_g128, wfmt::w4g128}};
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.f, 1.f);
  constexpr int64_t k = 512;
  std::vector<float> src(k);
  for (auto& v : src) v = dist(rng);
  src[17] = 9.f;  // an outlier, as real weights have
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(fw::type_traits(c.type).name));
    const auto t = fw::type_traits(c.type);
    ASSERT_TRUE(t.from_float && t.to_float);
    const size_t bytes = fw::row_bytes(t, k);
    ASSERT_EQ(static_cast<int64_t>(bytes), fw::cuda::row_bytes_of(c.f, k));
    std::vector<uint8_t> row(bytes);
    t.from_float(src.data(), row.data(), k);
    std::vector<float> want(k), got(k);
    t.to_float(row.data(), want.data(), k);
    for (int64_t j = 0; j < k / 32; ++j) fw::cuda::decode_chunk(c.f, row.data(), j, got.data() + 32 * j);
    for (int64_t i = 0; i < k; ++i) ASSERT_EQ(bits_of(got[i]), bits_of(want[i])) << "element " << i;
  }
}

// The activation quantization of the integer products, element by element as the kernel does it
// (its warp supplies the block's largest magnitude and sums the quants).
std::vector<fw::cpu::block_q8x> quantize_like_the_kernel(const std::vector<float>& x) {
  std::vector<fw::cpu::block_q8x> out(x.size() / 32);
  for (size_t b = 0; b < out.size(); ++b) {
    float amax = 0.f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[32 * b + i]));
    const float d = fw::cuda::act_block_scale(amax);
    int32_t sum = 0;
    for (int i = 0; i < 32; ++i) sum += out[b].qs[i] = fw::cuda::act_quant(x[32 * b + i], d != 0.f ? 1.f / d : 0.f);
    out[b].d = d, out[b].sum = sum;
  }
  return out;
}

std::vector<float> activations(size_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> x(k);
  for (auto& v : x) v = dist(rng);
  x[5] = 40.f;                                                      // an outlier block
  for (size_t i = 64; i < std::min<size_t>(96, k); ++i) x[i] = 0.f;  // an all-zero block (scale 0)
  for (size_t i = 96; i < std::min<size_t>(128, k); ++i) x[i] = (i % 2 ? 1.f : -1.f) * 0.5f;  // equal magnitudes
  return x;
}

TEST(cuda_math_test, activations_quantize_as_the_reference_int8_blocks) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const auto x = activations(1024, seed);
    std::vector<fw::cpu::block_q8x> want(x.size() / 32);
    fw::cpu::ref::quantize_q8x(x.data(), want.data(), static_cast<int64_t>(x.size()));
    const auto got = quantize_like_the_kernel(x);
    for (size_t b = 0; b < want.size(); ++b) {
      ASSERT_EQ(bits_of(got[b].d), bits_of(want[b].d)) << "block " << b;
      ASSERT_EQ(got[b].sum, want[b].sum) << "block " << b;
      for (int i = 0; i < 32; ++i) ASSERT_EQ(got[b].qs[i], want[b].qs[i]) << "block " << b << " element " << i;
    }
  }
  EXPECT_EQ(fw::cuda::act_quant(1e9f, 1.f), 127);
  EXPECT_EQ(fw::cuda::act_quant(-1e9f, 1.f), -127);
  EXPECT_EQ(fw::cuda::dp4a(0x01ff7f80, 0x0201ff7f, 5), 5 + 1 * 2 + (-1) * 1 + 127 * (-1) + (-128) * 127);
  // The device layout: each row's k int8 values, then 16-byte aligned (scale, sum) pairs.
  EXPECT_EQ(fw::cuda::q8_act_scales_offset(3, 96), 288);
  EXPECT_EQ(fw::cuda::q8_act_scales_offset(1, 32), 32);
  EXPECT_EQ(fw::cuda::q8_act_scales_offset(3, 32), 96);
  EXPECT_EQ(fw::cuda::q8_act_bytes(3, 96), 288 + 3 * 3 * 8);
  EXPECT_EQ(fw::cuda::q8_act_scales_offset(1, 32 * 7 + 16) % 16, 0);
}

template <wfmt F>
float row_dot_in_order(const std::vector<uint8_t>& row, const std::vector<fw::cpu::block_q8x>& x, const std::vector<int64_t>& order) {
  float s = 0.f;
  for (int64_t b : order) {
    fw::cuda::q_block w;
    fw::cuda::load_q_block<F>(row.data(), b, w);
    int32_t words[8];
    std::memcpy(words, x[static_cast<size_t>(b)].qs, 32);
    s += fw::cuda::q_block_dot<F>(w, words, x[static_cast<size_t>(b)].d, x[static_cast<size_t>(b)].sum);
  }
  return s;
}

// The formats of the int8 products with their reference dot products.
struct int8_case {
  fw::ggml_type type;
  wfmt f;
  float (*ref)(int64_t, const void*, const void*);
};
const int8_case int8_cases[] = {{fw::ggml_type::q4_0, wfmt::q4_0, fw::cpu::ref::dot_q4_0},
                                {fw::ggml_type::q4_1, wfmt::q4_1, fw::cpu::ref::dot_q4_1},
                                {fw::ggml_type::q8_0, wfmt::q8_0, fw::cpu::ref::dot_q8_0}};

TEST(cuda_math_test, integer_block_products_equal_the_reference_dot_products) {
  for (int64_t k : {int64_t{32}, int64_t{64 * 32}, int64_t{97 * 32}}) {  // 1, 64 and 97 blocks per row
    const auto w_src = activations(static_cast<size_t>(k), 7);
    const auto x = quantize_like_the_kernel(activations(static_cast<size_t>(k), 8));
    for (const auto& c : int8_cases) {
      SCOPED_TRACE(std::string(fw::type_traits(c.type).name) + " k " + std::to_string(k));
      EXPECT_TRUE(fw::cuda::int8_act_format(c.f));
      const auto t = fw::type_traits(c.type);
      std::vector<uint8_t> aligned(fw::row_bytes(t, k));
      t.from_float(w_src.data(), aligned.data(), k);
      const float want = c.ref(k, aligned.data(), x.data());
      // In the reference's order the sum is the reference's, bit for bit.
      std::vector<int64_t> in_order(static_cast<size_t>(k / 32));
      std::iota(in_order.begin(), in_order.end(), 0);
      float got = 0.f;
      switch (c.f) {
        case wfmt::q4_0: got = row_dot_in_order<wfmt::q4_0>(aligned, x, in_order); break;
        case wfmt::q4_1: got = row_dot_in_order<wfmt::q4_1>(aligned, x, in_order); break;
        default: got = row_dot_in_order<wfmt::q8_0>(aligned, x, in_order); break;
      }
      ASSERT_EQ(bits_of(got), bits_of(want));
      // In the kernel's order: each lane its blocks (every block once), then the warp's sum.
      std::vector<int> seen(static_cast<size_t>(k / 32), 0);
      double total = 0, mag = 0;
      for (int lane = 0; lane < 32; ++lane) {
        std::vector<int64_t> mine;
        fw::cuda::for_lane_blocks(lane, k / 32, [&](int64_t b) { mine.push_back(b), ++seen[static_cast<size_t>(b)]; });
        for (int64_t b : mine) EXPECT_EQ(b % 32, lane);
        switch (c.f) {
          case wfmt::q4_0: total += row_dot_in_order<wfmt::q4_0>(aligned, x, mine); break;
          case wfmt::q4_1: total += row_dot_in_order<wfmt::q4_1>(aligned, x, mine); break;
          default: total += row_dot_in_order<wfmt::q8_0>(aligned, x, mine); break;
        }
      }
      for (int n : seen) ASSERT_EQ(n, 1);
      for (size_t i = 0; i < w_src.size(); ++i) mag += std::abs(double(w_src[i]) * 40.0);
      EXPECT_NEAR(total, want, 1e-6 * mag);
    }
  }
}

// mma.sync.m16n8k32 with .s8 operands as the PTX ISA's fragment tables define it, written here
// on its own (not from mma_frag.hpp's helpers): lane = 4 g + q; A (16 x 32, row-major) from
// a0 = A[g][4q..], a1 = A[g + 8][4q..], a2 = A[g][16 + 4q..], a3 = A[g + 8][16 + 4q..]; B
// (32 x 8, column-major) from b0 = B[4q..][g], b1 = B[16 + 4q..][g]; lane's results c0 = D[g][2q],
// c1 = D[g][2q + 1], c2 = D[g + 8][2q], c3 = D[g + 8][2q + 1]. Every A and B element must come
// from exactly one register byte.
void emulate_mma_s8(const uint32_t a[32][4], const uint32_t b[32][2], int32_t c[32][4]) {
  int8_t A[16][32], B[32][8];
  int a_seen[16][32] = {}, b_seen[32][8] = {};
  auto byte = [](uint32_t w, int j) { return static_cast<int8_t>(static_cast<uint8_t>(w >> (8 * j))); };
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, q = lane % 4;
    for (int j = 0; j < 4; ++j) {
      A[g][4 * q + j] = byte(a[lane][0], j), ++a_seen[g][4 * q + j];
      A[g + 8][4 * q + j] = byte(a[lane][1], j), ++a_seen[g + 8][4 * q + j];
      A[g][16 + 4 * q + j] = byte(a[lane][2], j), ++a_seen[g][16 + 4 * q + j];
      A[g + 8][16 + 4 * q + j] = byte(a[lane][3], j), ++a_seen[g + 8][16 + 4 * q + j];
      B[4 * q + j][g] = byte(b[lane][0], j), ++b_seen[4 * q + j][g];
      B[16 + 4 * q + j][g] = byte(b[lane][1], j), ++b_seen[16 + 4 * q + j][g];
    }
  }
  for (int r = 0; r < 16; ++r)
    for (int e = 0; e < 32; ++e) ASSERT_EQ(a_seen[r][e], 1);
  for (int e = 0; e < 32; ++e)
    for (int t = 0; t < 8; ++t) ASSERT_EQ(b_seen[e][t], 1);
  auto d = [&](int r, int t) {
    int32_t s = 0;
    for (int e = 0; e < 32; ++e) s += int32_t{A[r][e]} * int32_t{B[e][t]};
    return s;
  };
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, q = lane % 4;
    c[lane][0] = d(g, 2 * q), c[lane][1] = d(g, 2 * q + 1), c[lane][2] = d(g + 8, 2 * q), c[lane][3] = d(g + 8, 2 * q + 1);
  }
}

// One warp's m16n8 tile of the tensor-core product as matmul_mma_kernel computes it, block by
// block: the fragments from mma_frag.hpp, the mma from the PTX table, each result's block term
// added in block order. out[channel][token].
template <wfmt F>
void mma_tile_like_the_kernel(const std::vector<std::vector<uint8_t>>& rows, const std::vector<std::vector<int8_t>>& xq,
                              const std::vector<std::vector<fw::cpu::block_q8x>>& xb, int64_t nb, float out[16][8]) {
  for (int r = 0; r < 16; ++r)
    for (int t = 0; t < 8; ++t) out[r][t] = 0.f;
  for (int64_t b = 0; b < nb; ++b) {
    uint32_t a[32][4], bf[32][2];
    for (int lane = 0; lane < 32; ++lane) {
      const auto l = fw::cuda::mma_lane_of(lane);
      fw::cuda::mma_a_frag<F>(rows[static_cast<size_t>(l.group)].data(), rows[static_cast<size_t>(l.group + 8)].data(), b,
                              l.quad, a[lane]);
      fw::cuda::mma_b_frag(xq[static_cast<size_t>(l.group)].data(), b, l.quad, bf[lane]);
    }
    int32_t c[32][4];
    emulate_mma_s8(a, bf, c);
    for (int lane = 0; lane < 32; ++lane) {
      const auto l = fw::cuda::mma_lane_of(lane);
      for (int i = 0; i < 4; ++i) {
        const int ch = fw::cuda::mma_c_channel(l, i), tok = fw::cuda::mma_c_token(l, i);
        float wd, wm;
        fw::cuda::q_block_scales<F>(rows[static_cast<size_t>(ch)].data(), b, wd, wm);
        const auto& x = xb[static_cast<size_t>(tok)][static_cast<size_t>(b)];
        out[ch][tok] += fw::cuda::q_block_term<F>(wd, wm, x.d, x.sum, c[lane][i]);
      }
    }
  }
}

TEST(cuda_math_test, tensor_core_fragments_multiply_to_the_reference_dot_products) {
  // The lanes' results cover the 16 x 8 tile once each.
  int seen[16][8] = {};
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const auto l = fw::cuda::mma_lane_of(lane);
      ++seen[fw::cuda::mma_c_channel(l, i)][fw::cuda::mma_c_token(l, i)];
    }
  for (const auto& row : seen)
    for (int v : row) ASSERT_EQ(v, 1);
  for (const int64_t k : {int64_t{32}, int64_t{5 * 32}}) {
    const int64_t nb = k / 32;
    std::vector<std::vector<int8_t>> xq(8);
    std::vector<std::vector<fw::cpu::block_q8x>> xb(8);
    for (size_t t = 0; t < 8; ++t) {
      xb[t] = quantize_like_the_kernel(activations(static_cast<size_t>(k), 20 + static_cast<uint32_t>(t)));
      for (const auto& blk : xb[t]) xq[t].insert(xq[t].end(), blk.qs, blk.qs + 32);  // the device's int8 rows
    }
    for (const auto& c : int8_cases) {
      SCOPED_TRACE(std::string(fw::type_traits(c.type).name) + " k " + std::to_string(k));
      const auto t = fw::type_traits(c.type);
      std::vector<std::vector<uint8_t>> rows(16, std::vector<uint8_t>(fw::row_bytes(t, k)));
      for (size_t r = 0; r < 16; ++r) {
        auto src = activations(static_cast<size_t>(k), 40 + static_cast<uint32_t>(r));
        if (r == 3) std::fill(src.begin(), src.end(), -2.f);  // every quant at one end
        t.from_float(src.data(), rows[r].data(), k);
      }
      float got[16][8];
      switch (c.f) {
        case wfmt::q4_0: mma_tile_like_the_kernel<wfmt::q4_0>(rows, xq, xb, nb, got); break;
        case wfmt::q4_1: mma_tile_like_the_kernel<wfmt::q4_1>(rows, xq, xb, nb, got); break;
        default: mma_tile_like_the_kernel<wfmt::q8_0>(rows, xq, xb, nb, got); break;
      }
      for (size_t r = 0; r < 16; ++r)
        for (size_t tok = 0; tok < 8; ++tok)
          ASSERT_EQ(bits_of(got[r][tok]), bits_of(c.ref(k, rows[r].data(), xb[tok].data())))
              << "channel " << r << " token " << tok << ": " << got[r][tok];
    }
  }
}

// W8A8's int8 activation row as the kernel makes it (w8_act.hpp): values, then a scale per group.
struct act8_row {
  std::vector<int8_t> q;
  std::vector<float> scales;
};
act8_row quantize8_like_the_kernel(const std::vector<float>& x, float fixed) {
  const int64_t k = static_cast<int64_t>(x.size()), g = fw::cuda::w8_group(k);
  act8_row r;
  for (int64_t grp = 0; grp < k / g; ++grp) {
    float amax = 0.f;
    for (int64_t i = grp * g; i < (grp + 1) * g; ++i) amax = std::max(amax, std::fabs(x[static_cast<size_t>(i)]));
    const float d = fw::cuda::w8_act_scale(amax, fixed);
    for (int64_t i = grp * g; i < (grp + 1) * g; ++i)
      r.q.push_back(fw::cuda::act_quant(x[static_cast<size_t>(i)], d > 0.f ? 1.f / d : 0.f));
    r.scales.push_back(d);
  }
  return r;
}

TEST(cuda_math_test, w8a8_activations_quantize_as_the_reference_rows) {
  for (const int64_t k : {int64_t{96}, int64_t{1024}})  // groups of 32 and of 64
    for (const float fixed : {0.f, 0.02f}) {            // each group's own scale, a static one (saturating)
      SCOPED_TRACE("k " + std::to_string(k) + " fixed " + std::to_string(fixed));
      const auto x = activations(static_cast<size_t>(k), 11);
      EXPECT_EQ(fw::cuda::w8_group(k), fw::act_i8_group(k));
      std::vector<uint8_t> want(fw::act_i8_row_bytes(k));
      fw::cpu::ref::quantize_act_i8(x.data(), want.data(), k, fixed);
      const auto got = quantize8_like_the_kernel(x, fixed);
      ASSERT_EQ(std::memcmp(got.q.data(), want.data() + fw::act_row_header, static_cast<size_t>(k)), 0);
      ASSERT_EQ(std::memcmp(got.scales.data(), want.data() + fw::act_row_header + k, 4 * got.scales.size()), 0);
    }
  EXPECT_EQ(fw::cuda::w8_act_scales_offset(3, 96), 288);
  EXPECT_EQ(fw::cuda::w8_act_bytes(3, 96), 288 + 3 * 3 * 4);
  EXPECT_EQ(fw::cuda::w8_act_bytes(2, 128), 256 + 2 * 2 * 4);
}

std::vector<uint8_t> w8a8_row(int64_t k, uint32_t seed) {
  const auto t = fw::type_traits(fw::ggml_type::fw_w8a8);
  std::vector<uint8_t> row(fw::row_bytes(t, k));
  const auto src = activations(static_cast<size_t>(k), seed);
  t.from_float(src.data(), row.data(), k);
  return row;
}

TEST(cuda_math_test, w8a8_integer_products_equal_the_reference) {
  for (const int64_t k : {int64_t{96}, int64_t{64 * 40}}) {
    const int64_t g = fw::cuda::w8_group(k), ng = k / g;
    const auto row = w8a8_row(k, 12);
    const auto xf = activations(static_cast<size_t>(k), 13);
    std::vector<uint8_t> xref(fw::act_i8_row_bytes(k));
    fw::cpu::ref::quantize_act_i8(xf.data(), xref.data(), k, 0.f);
    const float want = fw::cpu::ref::dot_w8a8(k, row.data(), xref.data());
    const auto x = quantize8_like_the_kernel(xf, 0.f);
    auto group_sum = [&](int64_t grp) {
      int32_t w[16], xw[16];
      const int words = static_cast<int>(g / 4);
      std::memcpy(w, row.data() + fw::cuda::w8_row_header + g * grp, static_cast<size_t>(g));
      std::memcpy(xw, x.q.data() + g * grp, static_cast<size_t>(g));
      return fw::cuda::i8_words_dot(w, xw, words, 0);
    };
    // In group order: the reference bit for bit.
    float acc = 0.f;
    for (int64_t grp = 0; grp < ng; ++grp) acc = fw::cuda::w8_group_term(x.scales[static_cast<size_t>(grp)], group_sum(grp), acc);
    ASSERT_EQ(bits_of(acc * fw::cuda::w8_row_scale(row.data())), bits_of(want)) << "k " << k;
    // In the dp4a kernel's order (lane l: groups l, l + 32, ...; then the warp's sum), close.
    double total = 0, mag = 0;
    for (int lane = 0; lane < 32; ++lane) {
      float part = 0.f;
      fw::cuda::for_lane_blocks(lane, ng, [&](int64_t grp) {
        part = fw::cuda::w8_group_term(x.scales[static_cast<size_t>(grp)], group_sum(grp), part);
      });
      total += part;
    }
    for (int64_t grp = 0; grp < ng; ++grp) mag += std::abs(double(x.scales[static_cast<size_t>(grp)])) * 127.0 * 127.0 * double(g);
    EXPECT_NEAR(total * fw::cuda::w8_row_scale(row.data()), want, 1e-6 * mag * fw::cuda::w8_row_scale(row.data())) << "k " << k;
  }
}

TEST(cuda_math_test, w8a8_tensor_core_tiles_equal_the_reference) {
  for (const int64_t k : {int64_t{96}, int64_t{256}}) {  // scale groups of one block and of two
    const int64_t g = fw::cuda::w8_group(k), gb = g / 32, nb = k / 32;
    std::vector<std::vector<uint8_t>> rows;
    for (uint32_t r = 0; r < 16; ++r) rows.push_back(w8a8_row(k, 60 + r));
    std::vector<std::vector<float>> xf;
    std::vector<act8_row> x;
    for (uint32_t t = 0; t < 8; ++t) {
      xf.push_back(activations(static_cast<size_t>(k), 80 + t));
      x.push_back(quantize8_like_the_kernel(xf.back(), t == 5 ? 0.03f : 0.f));  // token 5: a static scale
    }
    float acc[16][8] = {};
    for (int64_t grp = 0; grp < k / g; ++grp) {
      int32_t c[32][4] = {};
      for (int64_t j = 0; j < gb; ++j) {
        const int64_t b = grp * gb + j;
        ASSERT_LT(b, nb);
        uint32_t a[32][4], bf[32][2];
        for (int lane = 0; lane < 32; ++lane) {
          const auto l = fw::cuda::mma_lane_of(lane);
          fw::cuda::mma_a_frag<wfmt::w8>(rows[static_cast<size_t>(l.group)].data(),
                                         rows[static_cast<size_t>(l.group + 8)].data(), b, l.quad, a[lane]);
          fw::cuda::mma_b_frag(x[static_cast<size_t>(l.group)].q.data(), b, l.quad, bf[lane]);
        }
        int32_t part[32][4];
        emulate_mma_s8(a, bf, part);
        for (int lane = 0; lane < 32; ++lane)
          for (int i = 0; i < 4; ++i) c[lane][i] += part[lane][i];
      }
      for (int lane = 0; lane < 32; ++lane) {
        const auto l = fw::cuda::mma_lane_of(lane);
        for (int i = 0; i < 4; ++i) {
          const int ch = fw::cuda::mma_c_channel(l, i), tok = fw::cuda::mma_c_token(l, i);
          acc[ch][tok] = fw::cuda::w8_group_term(x[static_cast<size_t>(tok)].scales[static_cast<size_t>(grp)], c[lane][i], acc[ch][tok]);
        }
      }
    }
    for (size_t r = 0; r < 16; ++r)
      for (size_t t = 0; t < 8; ++t) {
        std::vector<uint8_t> xref(fw::act_i8_row_bytes(k));
        fw::cpu::ref::quantize_act_i8(xf[t].data(), xref.data(), k, t == 5 ? 0.03f : 0.f);
        const float got = acc[r][t] * fw::cuda::w8_row_scale(rows[r].data());
        ASSERT_EQ(bits_of(got), bits_of(fw::cpu::ref::dot_w8a8(k, rows[r].data(), xref.data())))
            << "k " << k << " channel " << r << " token " << t;
      }
  }
}

// W4A16's int16 activation row as the kernel makes it: its scale, its values, a sum per 32.
struct act16_row {
  float d = 0;
  std::vector<int16_t> q;
  std::vector<int32_t> sums;
};
act16_row quantize16_like_the_kernel(const std::vector<float>& x) {
  float amax = 0.f;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  act16_row r;
  r.d = fw::cuda::act16_row_scale(amax);
  const float id = r.d > 0.f ? 1.f / r.d : 0.f;
  for (size_t c = 0; c < x.size() / 32; ++c) {
    int32_t s = 0;
    for (int i = 0; i < 32; ++i) s += r.q.emplace_back(fw::cuda::act16_quant(x[32 * c + i], id));
    r.sums.push_back(s);
  }
  return r;
}

// One fw_w4a16 row's product with an int16 activation row, the groups summed in `order`.
float w4_row_dot_in_order(const std::vector<uint8_t>& row, int g, const act16_row& x, const std::vector<int64_t>& order) {
  float acc = 0.f;
  const int chunks = g / 32;
  for (int64_t grp : order) {
    const uint8_t* p = row.data() + grp * static_cast<int64_t>(fw::w4_group_bytes(g));
    const auto hdr = static_cast<uint32_t>(fw::cuda::load_i32_a4(p));
    int32_t isum = 0, xsum = 0;
    for (int c = 0; c < chunks; ++c) {
      int32_t w[4], xw[16];
      for (int i = 0; i < 4; ++i) w[i] = fw::cuda::load_i32_a4(p + 4 + 16 * c + 4 * i);
      std::memcpy(xw, x.q.data() + grp * g + 32 * c, 64);
      isum = fw::cuda::w4_chunk_isum(w, xw, isum);
      xsum += x.sums[static_cast<size_t>(grp * chunks + c)];
    }
    acc += fw::cuda::w4_group_term(static_cast<uint16_t>(hdr & 0xffffu), static_cast<uint16_t>(hdr >> 16), isum, xsum);
  }
  return acc;
}

TEST(cuda_math_test, w4a16_integer_products_equal_the_reference) {
  for (int64_t k : {int64_t{128}, int64_t{4096}, int64_t{97 * 128}}) {
    const auto xf = activations(static_cast<size_t>(k), 21);
    const auto x = quantize16_like_the_kernel(xf);
    // The activation row: the reference's, value for value.
    std::vector<uint8_t> ref_row(fw::act_i16_row_bytes(k));
    fw::cpu::ref::quantize_act_i16(xf.data(), ref_row.data(), k, 0.f);
    float ref_d;
    std::memcpy(&ref_d, ref_row.data(), 4);
    ASSERT_EQ(bits_of(x.d), bits_of(ref_d));
    ASSERT_EQ(std::memcmp(x.q.data(), ref_row.data() + fw::act_row_header, 2 * k), 0);
    ASSERT_EQ(std::memcmp(x.sums.data(), ref_row.data() + fw::act_row_header + 2 * k, 4 * (k / 32)), 0);
    for (int g : {32, 64, 128}) {
      SCOPED_TRACE("k " + std::to_string(k) + " group " + std::to_string(g));
      const auto w_src = activations(static_cast<size_t>(k), 22);
      std::vector<uint8_t> row(static_cast<size_t>(k / g) * fw::w4_group_bytes(g));
      for (int64_t grp = 0; grp < k / g; ++grp)
        fw::fw_format::quantize_w4_group(w_src.data() + grp * g, g, row.data() + grp * fw::w4_group_bytes(g));
      const wfmt f = g == 32 ? wfmt::w4g32 : g == 64 ? wfmt::w4g64 : wfmt::w4g128;
      EXPECT_TRUE(fw::cuda::int16_act_format(f));
      EXPECT_EQ(static_cast<size_t>(fw::cuda::row_bytes_of(f, k)), row.size());
      const float want = g == 32 ? fw::cpu::ref::dot_w4a16<32>(k, row.data(), ref_row.data())
                         : g == 64 ? fw::cpu::ref::dot_w4a16<64>(k, row.data(), ref_row.data())
                                   : fw::cpu::ref::dot_w4a16<128>(k, row.data(), ref_row.data());
      std::vector<int64_t> in_order(static_cast<size_t>(k / g));
      std::iota(in_order.begin(), in_order.end(), 0);
      ASSERT_EQ(bits_of(w4_row_dot_in_order(row, g, x, in_order) * x.d), bits_of(want));
      // The kernel's order: each lane its groups (every group once), the warp's sum, then the scale.
      std::vector<int> seen(static_cast<size_t>(k / g), 0);
      double total = 0, mag = 0;
      for (int lane = 0; lane < 32; ++lane) {
        std::vector<int64_t> mine;
        fw::cuda::for_lane_groups(lane, k / g, [&](int64_t grp) { mine.push_back(grp), ++seen[static_cast<size_t>(grp)]; });
        total += w4_row_dot_in_order(row, g, x, mine);
      }
      for (int n : seen) ASSERT_EQ(n, 1);
      for (size_t i = 0; i < w_src.size(); ++i) mag += std::abs(double(w_src[i]) * xf[i]);
      EXPECT_NEAR(total * x.d, want, 1e-6 * mag + 1e-6);
    }
  }
  EXPECT_EQ(fw::cuda::dp2a_lo(static_cast<int32_t>(0x8001fffeu), 0x7f80ff02, 9), 9 + (-2) * 2 + (-32767) * (-1));
  EXPECT_EQ(fw::cuda::dp2a_hi(static_cast<int32_t>(0x8001fffeu), 0x7f80ff02, 9), 9 + (-2) * (-128) + (-32767) * 127);
  EXPECT_EQ(fw::cuda::act16_quant(1e9f, 1.f), 32767);
  EXPECT_EQ(fw::cuda::act16_quant(-1e9f, 1.f), -32767);
  EXPECT_EQ(fw::cuda::q16_act_sums_offset(3, 96), 576);
  EXPECT_EQ(fw::cuda::q16_act_scales_offset(3, 96), 576 + 48);
  EXPECT_EQ(fw::cuda::q16_act_bytes(3, 96), 576 + 48 + 12);
  EXPECT_EQ(fw::cuda::q16_act_scales_offset(1, 32) % 16, 0);
}

/// Direct double-precision softmax statistics of scores s: weights' sum of values and entropy.
struct direct {
  std::vector<double> out;
  double entropy;
};
direct softmax_direct(const std::vector<float>& s, const std::vector<std::vector<float>>& v) {
  const double m = *std::max_element(s.begin(), s.end());
  double l = 0;
  std::vector<double> p(s.size());
  for (size_t i = 0; i < s.size(); ++i) l += p[i] = std::exp(s[i] - m);
  direct d{std::vector<double>(v[0].size(), 0.0), 0.0};
  for (size_t i = 0; i < s.size(); ++i) {
    const double q = p[i] / l;
    if (q > 0) d.entropy -= q * std::log(q);
    for (size_t e = 0; e < v[i].size(); ++e) d.out[e] += q * v[i][e];
  }
  return d;
}

TEST(cuda_math_test, split_softmax_parts_merge_in_any_order_to_the_direct_result) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.f, 3.f);
  for (int trial = 0; trial < 50; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 700), dims = 8;
    std::vector<float> s(n);
    std::vector<std::vector<float>> v(n, std::vector<float>(dims));
    for (int i = 0; i < n; ++i) {
      s[i] = dist(rng) + (trial % 5 == 0 && i == n / 2 ? 40.f : 0.f);  // sometimes one dominant key
      for (auto& x : v[i]) x = dist(rng);
    }
    // Chunks as the kernel cuts them, each accumulated key by key; merged in a shuffled order.
    const int chunk = 32 * (1 + static_cast<int>(rng() % 4));
    struct part {
      fw::cuda::softmax_part st;
      std::vector<float> acc;
    };
    std::vector<part> parts;
    for (int b = 0; b < n; b += chunk) {
      part p{{}, std::vector<float>(dims, 0.f)};
      for (int i = b; i < std::min(n, b + chunk); ++i) {
        const float f = fw::cuda::softmax_add(p.st, s[i]);
        const float w = std::exp(s[i] - p.st.m);
        for (int e = 0; e < dims; ++e) p.acc[e] = p.acc[e] * f + w * v[i][e];
      }
      parts.push_back(std::move(p));
    }
    parts.push_back({{}, std::vector<float>(dims, 0.f)});  // an empty chunk (keys past the row's end)
    std::shuffle(parts.begin(), parts.end(), rng);
    fw::cuda::softmax_part total;
    std::vector<float> acc(dims, 0.f);
    for (const auto& p : parts) {
      const auto k = fw::cuda::softmax_merge(total, p.st);
      for (int e = 0; e < dims; ++e) acc[e] = acc[e] * k.a + p.acc[e] * k.b;
    }
    const direct d = softmax_direct(s, v);
    constexpr double out_tolerance = 2e-5, entropy_tolerance = 2e-4;  // float accumulation over <= 700 keys
    for (int e = 0; e < dims; ++e) EXPECT_NEAR(acc[e] / total.l, d.out[e], out_tolerance * (1 + std::abs(d.out[e])));
    EXPECT_NEAR(fw::cuda::softmax_entropy(total), d.entropy, entropy_tolerance * (1 + d.entropy)) << "n " << n;
  }
}

TEST(cuda_math_test, attention_plans_cover_every_key_in_whole_warps) {
  for (int64_t rows : {1, 2, 16, 64, 512, 4096})
    for (int heads : {9, 32, 64})
      for (int keys : {1, 31, 64, 65, 300, 4096, 32768}) {
        const auto p = fw::cuda::plan_attention(rows, heads, keys);
        SCOPED_TRACE(std::to_string(rows) + " rows, " + std::to_string(heads) + " heads, " + std::to_string(keys) + " keys");
        EXPECT_EQ(p.chunk_keys % 32, 0);
        EXPECT_GE(static_cast<int64_t>(p.chunks) * p.chunk_keys, keys);
        EXPECT_LT(static_cast<int64_t>(p.chunks - 1) * p.chunk_keys, keys);  // no chunk starts past the keys
        if (rows * heads >= 2048) {
          EXPECT_EQ(p.chunks, 1);
        }
        if (p.chunks > 1) {
          EXPECT_GE(p.chunk_keys, 64) << "at least 64 keys per chunk";
        }
      }
  // A batch-1 decode at a long context is cut into many chunks (the GPU stays busy).
  EXPECT_GE(fw::cuda::plan_attention(1, 32, 4096).chunks, 32);
}

TEST(cuda_math_test, kv_tile_addressing_is_the_pools) {
  for (auto dt : {fw::kv_dtype::f32, fw::kv_dtype::f16}) {
    const auto layout = fw::test::kv_shape(16, dt, 3, 2, 64);
    auto pool = fw::test::make_kv_pool(layout, 8);
    const fw::cuda::kv_tiles_layout t{layout.n_layer, layout.n_head_kv, layout.head_dim, layout.block_tokens};
    const auto* base = static_cast<const std::byte*>(pool->block_data(0).data());
    const size_t eb = layout.elem_bytes();
    for (uint32_t b : {0u, 5u, 7u})
      for (uint32_t l = 0; l < layout.n_layer; ++l)
        for (uint32_t h = 0; h < layout.n_head_kv; ++h)
          for (uint32_t tok : {0u, 9u, 15u})
            for (uint32_t e : {0u, 1u, 63u}) {
              const auto* k = static_cast<const std::byte*>(pool->k_data(b, l, h)) + (size_t{e} * layout.block_tokens + tok) * eb;
              const auto* v = static_cast<const std::byte*>(pool->v_data(b, l, h)) + (size_t{tok} * layout.head_dim + e) * eb;
              ASSERT_EQ(base + t.k_at(b, l, h, tok, e) * static_cast<int64_t>(eb), k);
              ASSERT_EQ(base + t.v_at(b, l, h, tok, e) * static_cast<int64_t>(eb), v);
            }
  }
}

}  // namespace
