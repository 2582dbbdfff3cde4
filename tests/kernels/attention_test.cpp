// The AVX-512 and AVX2 attention kernels against the scalar reference: head sizes with and without a SIMD
// path, block sizes of 16 and 32, causal prefixes that end inside and at the edge of a 16-key
// chunk, query counts that leave partial register tiles, and the attention entropy.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/format/kv_q8.hpp"
#include "kernels/format/quant_ref.hpp"

namespace fw::cpu {
namespace {

constexpr float out_tolerance = 2e-5f;      // outputs are convex mixes of values in [-1, 1]
constexpr float entropy_tolerance = 2e-4f;  // nats; online vs two-pass softmax sums

struct problem {
  int head_dim, block_tokens, n_keys;
  kv_elem elem;
  std::vector<std::vector<float>> k, v;  // per tile
  std::vector<std::vector<uint16_t>> k16, v16;  // the same values as IEEE half, when f16
  std::vector<std::vector<int8_t>> k8, v8;      // q8 tiles: int8 elements, then the float scales
  std::vector<const void*> kp, vp;
  std::vector<std::vector<float>> q;
  std::vector<const float*> qp;
  std::vector<int32_t> nk;

  problem(int hd, int bt, int n_keys_max, int n_q, float q_scale, uint32_t seed, kv_elem el = kv_elem::f32)
      : head_dim(hd), block_tokens(bt), n_keys(n_keys_max), elem(el) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    const int n_tiles = (n_keys_max + bt - 1) / bt;
    k.assign(n_tiles, std::vector<float>(static_cast<size_t>(hd) * bt));
    v.assign(n_tiles, std::vector<float>(static_cast<size_t>(hd) * bt));
    for (int t = 0; t < n_tiles; ++t) {
      for (float& x : k[t]) x = u(rng);
      for (float& x : v[t]) x = u(rng);
    }
    if (elem == kv_elem::q8) {
      // Each token's K column and V row quantized as the pool does (kv_q8.hpp); past n_keys the
      // last tile keeps garbage and NaN scales, as a reused block would: no output may see them.
      const size_t tile_bytes = static_cast<size_t>(hd) * bt + bt * sizeof(float);
      for (int t = 0; t < n_tiles; ++t) {
        k8.emplace_back(tile_bytes), v8.emplace_back(tile_bytes);
        float* ks = q8_tile_scales(k8[t].data(), bt, hd);
        float* vs = q8_tile_scales(v8[t].data(), bt, hd);
        std::vector<float> col(hd);
        std::vector<int8_t> qc(hd);
        for (int j = 0; j < bt; ++j) {
          if (t * bt + j >= n_keys_max) {
            ks[j] = vs[j] = NAN;
            for (int e = 0; e < hd; ++e) k8[t][static_cast<size_t>(e) * bt + j] = v8[t][static_cast<size_t>(j) * hd + e] = 99;
            continue;
          }
          for (int e = 0; e < hd; ++e) col[e] = k[t][static_cast<size_t>(e) * bt + j];
          ks[j] = quantize_kv_row(col.data(), hd, qc.data());
          for (int e = 0; e < hd; ++e) k8[t][static_cast<size_t>(e) * bt + j] = qc[e];
          vs[j] = quantize_kv_row(v[t].data() + static_cast<size_t>(j) * hd, hd, v8[t].data() + static_cast<size_t>(j) * hd);
        }
        kp.push_back(k8[t].data()), vp.push_back(v8[t].data());
      }
    } else if (elem == kv_elem::f16) {
      for (int t = 0; t < n_tiles; ++t) {
        k16.emplace_back(k[t].size()), v16.emplace_back(v[t].size());
        for (size_t i = 0; i < k[t].size(); ++i) k16[t][i] = fp32_to_fp16(k[t][i]), v16[t][i] = fp32_to_fp16(v[t][i]);
        kp.push_back(k16[t].data()), vp.push_back(v16[t].data());
      }
    } else {
      for (int t = 0; t < n_tiles; ++t) kp.push_back(k[t].data()), vp.push_back(v[t].data());
    }
    for (int i = 0; i < n_q; ++i) {
      q.emplace_back(hd);
      for (float& x : q.back()) x = u(rng) * q_scale;
      // Causal prefixes: the last queries see everything, earlier ones fewer keys (at least 1).
      nk.push_back(std::max(1, n_keys_max - (n_q - 1 - i) * 3));
    }
    for (auto& x : q) qp.push_back(x.data());
  }

  kv_tiles tiles() const { return {kp.data(), vp.data(), static_cast<int>(kp.size()), block_tokens, head_dim, elem}; }
};

void run(attention_fn fn, const problem& p, std::vector<std::vector<float>>& out, std::vector<float>& entropy) {
  out.assign(p.q.size(), std::vector<float>(p.head_dim, -7.f));
  std::vector<float*> op;
  for (auto& o : out) op.push_back(o.data());
  entropy.assign(p.q.size(), -1.f);
  const attention_queries qs{static_cast<int>(p.q.size()), p.qp.data(), op.data(), p.nk.data(), entropy.data()};
  fn(p.tiles(), qs, 1.f / std::sqrt(static_cast<float>(p.head_dim)));
}

TEST(attention_test, reference_is_softmax_weighted_sum) {
  // One query, two keys: hand-computable.
  // head_dim 2, block_tokens 16: k0 = (1, 0), k1 = (0, 0) in a transposed K tile.
  std::vector<float> kt(2 * 16, 0.f), vt(16 * 2, 0.f);
  kt[0 * 16 + 0] = 1.f;  // key 0, dim 0
  vt[0 * 2 + 0] = 1.f;   // value 0 = (1, 0)
  vt[1 * 2 + 1] = 1.f;   // value 1 = (0, 1)
  const void* kp = kt.data();
  const void* vp = vt.data();
  const float q[2] = {std::log(3.f), 0.f};  // scores ln3 and 0 -> weights 3/4, 1/4
  float out[2];
  const float* qp = q;
  float* outp = out;
  const int32_t n = 2;
  float h = 0;
  ref::attention({&kp, &vp, 1, 16, 2, kv_elem::f32}, {1, &qp, &outp, &n, &h}, 1.f);
  EXPECT_NEAR(out[0], 0.75f, 1e-6);
  EXPECT_NEAR(out[1], 0.25f, 1e-6);
  EXPECT_NEAR(h, -(0.75 * std::log(0.75) + 0.25 * std::log(0.25)), 1e-6);
}

// fn against the reference over head sizes, f32/f16/q8 caches, block sizes, causal prefixes that
// end inside and at the edges of a SIMD chunk, query counts that leave partial tiles, flat and
// peaked distributions.
void expect_matches_reference(attention_fn fn, std::initializer_list<int> blocks, std::initializer_list<int> key_counts) {
  for (kv_elem elem : {kv_elem::f32, kv_elem::f16, kv_elem::q8}) {
    for (int hd : {32, 64, 96, 128}) {
      for (int bt : blocks) {
        for (int n_keys : key_counts) {
          for (int n_q : {1, 2, 3, 5, 9, 12}) {
            for (float q_scale : {1.f, 8.f}) {
              const problem p(hd, bt, n_keys, n_q, q_scale, static_cast<uint32_t>(hd * 7 + bt + n_keys * 31 + n_q), elem);
              std::vector<std::vector<float>> want, got;
              std::vector<float> h_want, h_got;
              run(ref::attention, p, want, h_want);
              run(fn, p, got, h_got);
              for (int i = 0; i < n_q; ++i) {
                SCOPED_TRACE(testing::Message() << static_cast<int>(elem) << " (0 f32, 1 f16, 2 q8) hd " << hd << " bt " << bt << " keys "
                                                << p.nk[i] << " query " << i << "/" << n_q << " q_scale " << q_scale);
                for (int e = 0; e < hd; ++e) ASSERT_NEAR(got[i][e], want[i][e], out_tolerance) << "element " << e;
                ASSERT_NEAR(h_got[i], h_want[i], entropy_tolerance);
              }
            }
          }
        }
      }
    }
  }
}

TEST(attention_test, avx512_matches_reference) {
  if (!host_features().has_avx512()) GTEST_SKIP() << "host has no AVX-512: only the reference path runs here";
  expect_matches_reference(avx512::attention, {16, 32}, {1, 15, 16, 17, 33, 100, 130});
}

TEST(attention_test, avx2_matches_reference) {
  if (!host_features().has_avx2()) GTEST_SKIP() << "host has no AVX2+FMA+F16C: only the reference path runs here";
  expect_matches_reference(avx2::attention, {8, 16, 32}, {1, 7, 8, 9, 15, 16, 17, 33, 100, 130});
}

// A half-precision cache changes the result only by the rounding of K and V to 11 bits.
TEST(attention_test, f16_cache_is_close_to_f32) {
  const problem p32(64, 16, 100, 6, 4.f, 9, kv_elem::f32), p16(64, 16, 100, 6, 4.f, 9, kv_elem::f16);
  std::vector<std::vector<float>> a, b;
  std::vector<float> ha, hb;
  const auto fn = select_attention(best_simd_level(), 64, 16);
  run(fn, p32, a, ha);
  run(fn, p16, b, hb);
  for (size_t i = 0; i < a.size(); ++i)
    for (int e = 0; e < 64; ++e) ASSERT_NEAR(a[i][e], b[i][e], 2e-3) << "query " << i << " element " << e;
}

TEST(attention_test, selection_falls_back_for_unsupported_shapes) {
  EXPECT_EQ(select_attention(simd_level::scalar, 64, 16), &ref::attention);
  EXPECT_EQ(select_attention(simd_level::avx512, 48, 16), &ref::attention);  // head_dim without a SIMD path
  if (host_features().has_avx2()) {
    EXPECT_EQ(select_attention(simd_level::avx512, 64, 8), &avx2::attention);  // 8: too small for AVX-512, fine for AVX2
    EXPECT_EQ(select_attention(simd_level::avx2, 64, 4), &ref::attention);  // block not a multiple of 8
    EXPECT_EQ(select_attention(simd_level::avx2, 64, 16), &avx2::attention);
  } else {
    EXPECT_EQ(select_attention(simd_level::avx512, 64, 8), &ref::attention);
  }
  if (host_features().has_avx512()) {
    EXPECT_EQ(select_attention(simd_level::avx512, 64, 16), &avx512::attention);
  }
}

TEST(attention_test, entropy_is_optional) {
  const problem p(64, 16, 40, 3, 1.f, 5);
  std::vector<std::vector<float>> out(3, std::vector<float>(64));
  std::vector<float*> op;
  for (auto& o : out) op.push_back(o.data());
  const attention_queries qs{3, p.qp.data(), op.data(), p.nk.data(), nullptr};
  select_attention(best_simd_level(), 64, 16)(p.tiles(), qs, 0.125f);
  for (auto& o : out)
    for (float x : o) ASSERT_TRUE(std::isfinite(x));
}

}  // namespace
}  // namespace fw::cpu

namespace fw::cpu {
namespace {

// A q8 cache changes the result by the int8 rounding of K and V (half a step of max |x| / 127 per
// element: ~0.4% of the largest value): outputs within 2e-2 of the float cache's on values in
// [-1, 1], against 2e-3 for f16.
constexpr float q8_vs_f32_tolerance = 2e-2f;

TEST(attention_test, q8_cache_is_close_to_f32) {
  for (int n_keys : {5, 100, 300}) {
    const problem p32(64, 16, n_keys, 6, 4.f, 11, kv_elem::f32), p8(64, 16, n_keys, 6, 4.f, 11, kv_elem::q8);
    std::vector<std::vector<float>> a, b;
    std::vector<float> ha, hb;
    const auto fn = select_attention(best_simd_level(), 64, 16);
    run(fn, p32, a, ha);
    run(fn, p8, b, hb);
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i)
      for (int e = 0; e < 64; ++e) {
        ASSERT_NEAR(a[i][e], b[i][e], q8_vs_f32_tolerance) << "keys " << n_keys << " query " << i << " element " << e;
        worst = std::max(worst, static_cast<double>(std::fabs(a[i][e] - b[i][e])));
      }
    EXPECT_GT(worst, 0.0) << "a q8 cache that rounds nothing is not a q8 cache";
  }
}

}  // namespace
}  // namespace fw::cpu
