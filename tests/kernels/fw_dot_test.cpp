// flywheel's own formats (W8A8, W4A16): round-trip error bounds of the quantizers, the AVX2 and
// AVX-512 kernels (unpacked and packed) and the AMX W8A8 product against the scalar reference (bit
// for bit: integer sums are exact and the float steps run in the reference's order), and the
// reference against float math within the rounding bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/vec_dot.hpp"
#include "kernels/format/fw_formats.hpp"
#include "kernels/format/quant_ref.hpp"
#include "kernels/ref/fw_dot_ref.hpp"

namespace fw::cpu {
namespace {

const ggml_type fw_types[] = {ggml_type::fw_w8a8, ggml_type::fw_w4a16_g32, ggml_type::fw_w4a16_g64,
                              ggml_type::fw_w4a16_g128};

std::vector<float> random_row(std::mt19937& rng, int64_t k, float scale = 1.f) {
  std::normal_distribution<float> nd(0.f, scale);
  std::vector<float> v(k);
  for (auto& x : v) x = nd(rng);
  return v;
}

TEST(fw_formats, traits_and_names) {
  for (ggml_type t : fw_types) {
    const auto tr = type_traits(t);
    EXPECT_TRUE(tr.flywheel);
    EXPECT_TRUE(is_fw_type_id(static_cast<uint32_t>(t)));
    EXPECT_EQ(ggml_type_name(static_cast<uint32_t>(t)), tr.name);
  }
  EXPECT_EQ(row_bytes(type_traits(ggml_type::fw_w8a8), 576), 32u + 576u);
  EXPECT_EQ(row_bytes(type_traits(ggml_type::fw_w4a16_g128), 1536), 12u * 68u);
  EXPECT_EQ(ggml_type_name(fw_type_base + 0x999), "fw_unknown");
}

TEST(fw_formats, w8_round_trip_error_is_half_a_step) {
  std::mt19937 rng(1);
  for (int64_t k : {32, 576, 1536}) {
    auto x = random_row(rng, k, 0.05f);
    x[3] = 0.9f;  // an outlier sets the scale
    std::vector<uint8_t> q(row_bytes(type_traits(ggml_type::fw_w8a8), k));
    quantize_row_ref(ggml_type::fw_w8a8, x.data(), q.data(), k);
    std::vector<float> y(k);
    dequantize_row_ref(ggml_type::fw_w8a8, q.data(), y.data(), k);
    const float step = 0.9f / 127.f;
    for (int64_t i = 0; i < k; ++i) ASSERT_LE(std::fabs(x[i] - y[i]), 0.5f * step * 1.0001f) << i;
    EXPECT_FLOAT_EQ(y[3], 0.9f);
  }
}

TEST(fw_formats, w4_round_trip_error_is_bounded_by_the_group_step) {
  std::mt19937 rng(2);
  for (ggml_type t : {ggml_type::fw_w4a16_g32, ggml_type::fw_w4a16_g64, ggml_type::fw_w4a16_g128}) {
    const int g = static_cast<int>(type_traits(t).block_size);
    const int64_t k = 512;
    auto x = random_row(rng, k, 0.1f);
    std::vector<uint8_t> q(row_bytes(type_traits(t), k));
    quantize_row_ref(t, x.data(), q.data(), k);
    std::vector<float> y(k);
    dequantize_row_ref(t, q.data(), y.data(), k);
    for (int64_t b = 0; b < k / g; ++b) {
      float lo = x[b * g], hi = x[b * g];
      for (int i = 0; i < g; ++i) lo = std::min(lo, x[b * g + i]), hi = std::max(hi, x[b * g + i]);
      const float step = (hi - lo) / 15.f;
      // Half a step from rounding, plus the fp16 rounding of scale and offset and the integer
      // zero point, which shifts the grid by up to half a step.
      for (int i = 0; i < g; ++i)
        ASSERT_LE(std::fabs(x[b * g + i] - y[b * g + i]), step * 1.01f + 1e-3f) << type_traits(t).name << " " << i;
    }
  }
}

TEST(fw_formats, constant_group_round_trips) {
  std::vector<float> x(128, 0.25f);
  std::vector<uint8_t> q(w4_group_bytes(128));
  fw_format::quantize_w4_group(x.data(), 128, q.data());
  std::vector<float> y(128);
  fw_format::dequantize_w4_group(q.data(), 128, y.data());
  for (float v : y) EXPECT_NEAR(v, 0.25f, 1e-3f);
}

// Reference dot vs exact float math on the dequantized weights and activations.
TEST(fw_dot_ref, matches_float_math_on_the_quantized_values) {
  std::mt19937 rng(3);
  for (ggml_type t : fw_types) {
    const auto kern = select_dot_kernel(t, simd_level::scalar);
    ASSERT_EQ(kern.level, simd_level::scalar);
    for (int64_t k : {128, 640, 1536}) {
      auto w = random_row(rng, k, 0.1f), x = random_row(rng, k, 1.f);
      std::vector<uint8_t> wq(row_bytes(type_traits(t), k)), xq(act_row_bytes(kern.act, k));
      quantize_row_ref(t, w.data(), wq.data(), k);
      kern.quantize_row(x.data(), xq.data(), k, 0.f);
      std::vector<float> wd(k);
      dequantize_row_ref(t, wq.data(), wd.data(), k);
      float dx;
      std::memcpy(&dx, xq.data(), 4);
      const auto* group_scale = reinterpret_cast<const float*>(xq.data() + act_row_header + k);
      double exact = 0, mag = 0;
      for (int64_t i = 0; i < k; ++i) {
        const double xv = kern.act == act_format::i8_row
                              ? group_scale[i / act_i8_group(k)] *
                                    static_cast<double>(reinterpret_cast<const int8_t*>(xq.data() + act_row_header)[i])
                              : dx * static_cast<double>(reinterpret_cast<const int16_t*>(xq.data() + act_row_header)[i]);
        exact += wd[i] * xv;
        mag += std::fabs(wd[i] * xv);
      }
      EXPECT_NEAR(kern.dot(k, wq.data(), xq.data()), exact, 1e-5 * mag + 1e-6) << type_traits(t).name << " k=" << k;
    }
  }
}

TEST(fw_dot_ref, static_activation_scale_saturates) {
  std::vector<float> x(32, 0.f);
  x[0] = 10.f, x[1] = -0.5f;
  std::vector<uint8_t> q(act_i8_row_bytes(32));
  EXPECT_EQ(act_i8_group(32), 32);
  EXPECT_EQ(act_i8_group(576), 64);
  ref::quantize_act_i8(x.data(), q.data(), 32, 0.01f);
  const auto* v = reinterpret_cast<const int8_t*>(q.data() + act_row_header);
  EXPECT_EQ(v[0], 127);
  EXPECT_EQ(v[1], -50);
}

// Every SIMD entry point (quantizers, dot, gemv, gemm) equals the scalar reference bit for bit.
TEST(fw_dot_avx2, equals_the_reference_bit_for_bit) {
  if (!host_features().has_avx2()) GTEST_SKIP() << "host has no AVX2";
  std::mt19937 rng(4);
  for (ggml_type t : fw_types) {
    const auto fast = select_dot_kernel(t, simd_level::avx2);
    const auto ref = select_dot_kernel(t, simd_level::scalar);
    ASSERT_EQ(fast.level, simd_level::avx2) << type_traits(t).name;
    for (int64_t k : {128, 384, 1536}) {
      const int64_t nw = 11, nx = 7;
      const size_t rb = row_bytes(type_traits(t), k), xb = act_row_bytes(fast.act, k);
      std::vector<uint8_t> w(rb * nw), xf(xb * nx), xr(xb * nx);
      for (int64_t i = 0; i < nw; ++i) {
        auto row = random_row(rng, k, 0.1f);
        quantize_row_ref(t, row.data(), w.data() + i * rb, k);
      }
      for (int64_t j = 0; j < nx; ++j) {
        auto row = random_row(rng, k, j == 3 ? 50.f : 1.f);
        fast.quantize_row(row.data(), xf.data() + j * xb, k, 0.f);
        ref.quantize_row(row.data(), xr.data() + j * xb, k, 0.f);
        ASSERT_EQ(0, std::memcmp(xf.data() + j * xb, xr.data() + j * xb, xb)) << "activation row " << j;
      }
      std::vector<float> y(nw * nx), yv(nw);
      fast.gemm(k, w.data(), rb, nw, xf.data(), xb, nx, y.data(), nw);
      for (int64_t j = 0; j < nx; ++j) {
        fast.gemv(k, w.data(), rb, nw, xf.data() + j * xb, yv.data());
        for (int64_t i = 0; i < nw; ++i) {
          const float r = ref.dot(k, w.data() + i * rb, xr.data() + j * xb);
          ASSERT_EQ(fast.dot(k, w.data() + i * rb, xf.data() + j * xb), r) << type_traits(t).name << " k=" << k;
          ASSERT_EQ(y[j * nw + i], r) << "gemm " << type_traits(t).name << " k=" << k << " " << i << "," << j;
          ASSERT_EQ(yv[i], r) << "gemv " << type_traits(t).name << " k=" << k << " row " << i;
        }
      }
    }
  }
}

// -- AVX-512 VNNI --

const char* no_avx512_vnni() {
  return host_features().has_avx512_vnni() ? nullptr : "host has no AVX-512 F/BW/VL + VNNI";
}

/// How a test fills its weight rows: quantized normal rows, or the format's extreme codes
/// (int8 -128 / -127 / 127 at random; 4-bit 0 / 15 at random, scales kept from a quantized row).
enum class fill { normal, extreme };

std::vector<uint8_t> weight_rows(std::mt19937& rng, ggml_type t, int64_t k, int64_t n, fill f) {
  const size_t rb = row_bytes(type_traits(t), k);
  std::vector<uint8_t> w(rb * n);
  std::bernoulli_distribution coin;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t* row = w.data() + i * rb;
    auto v = random_row(rng, k, 0.1f);
    quantize_row_ref(t, v.data(), row, k);
    if (f == fill::normal) continue;
    if (t == ggml_type::fw_w8a8) {
      std::uniform_int_distribution<int> pick(0, 2);
      for (int64_t e = 0; e < k; ++e) {
        const int c = pick(rng);
        row[sizeof(w8_row_header) + e] = static_cast<uint8_t>(c == 0 ? 127 : c == 1 ? -127 : -128);
      }
    } else {
      const int g = static_cast<int>(type_traits(t).block_size);
      for (int64_t b = 0; b < k / g; ++b)
        for (int e = 0; e < g / 2; ++e) row[b * w4_group_bytes(g) + sizeof(w4_group_header) + e] = coin(rng) ? 0xff : 0x00;
    }
  }
  return w;
}

/// Activation rows for the case: j % 4 == 1 carries an outlier channel (x 1000), j % 4 == 3 is
/// all +-big (every value saturates its code), the rest are normal.
std::vector<float> act_rows(std::mt19937& rng, int64_t k, int64_t n) {
  std::vector<float> x;
  std::bernoulli_distribution coin;
  for (int64_t j = 0; j < n; ++j) {
    auto row = random_row(rng, k, 1.f);
    if (j % 4 == 1) row[(j * 37) % k] *= 1000.f;
    if (j % 4 == 3)
      for (auto& v : row) v = coin(rng) ? 1e4f : -1e4f;
    x.insert(x.end(), row.begin(), row.end());
  }
  return x;
}

// Every entry point of a SIMD path (dot, gemv, gemm, packed_gemm) equals the scalar reference
// bit for bit: k sizes with 32- and 64-channel activation groups, 1..13 activation rows (the
// packed tiles of 8 on AVX-512, 4 on AVX2 with or without VNNI, and the rest), 37 weight rows (two packed groups and an
// unpacked tail), dynamic and static activation scales, extreme weight codes and saturating
// activations.
class fw_dot_simd_test : public ::testing::TestWithParam<simd_level> {};

TEST_P(fw_dot_simd_test, equals_the_reference_bit_for_bit) {
  const simd_level level = GetParam();
  if (level == simd_level::avx512) {
    if (const char* why = no_avx512_vnni()) GTEST_SKIP() << why;
  } else if (level == simd_level::avx2_vnni && !host_features().has_avx2_vnni()) {
    GTEST_SKIP() << "host has neither AVX-VNNI nor AVX-512 VNNI (256-bit vpdpbusd / vpdpwssd)";
  } else if (!host_features().has_avx2()) {
    GTEST_SKIP() << "host has no AVX2";
  }
  std::mt19937 rng(5);
  for (ggml_type t : fw_types) {
    const auto fast = select_dot_kernel(t, level);
    const auto ref = select_dot_kernel(t, simd_level::scalar);
    ASSERT_EQ(fast.level, level) << type_traits(t).name;
    ASSERT_NE(fast.pack, nullptr) << type_traits(t).name;
    const int64_t g = type_traits(t).block_size;
    for (int64_t k : {32, 96, 128, 160, 384, 576, 1536}) {
      if (k % g != 0) continue;
      for (fill f : {fill::normal, fill::extreme})
        for (float fixed_scale : {0.f, 0.01f}) {
          if (fixed_scale > 0 && t != ggml_type::fw_w8a8) continue;  // int16 rows have no static scale
          SCOPED_TRACE(std::string(type_traits(t).name) + " k=" + std::to_string(k) + (f == fill::extreme ? " extreme" : "") +
                       (fixed_scale > 0 ? " static" : ""));
          const int64_t nw = 37, nx = 13;
          const size_t rb = row_bytes(type_traits(t), k), xb = act_row_bytes(fast.act, k);
          const auto w = weight_rows(rng, t, k, nw, f);
          const auto xf32 = act_rows(rng, k, nx);
          std::vector<uint8_t> x(xb * nx), packed(rb * nw);
          for (int64_t j = 0; j < nx; ++j) ref.quantize_row(xf32.data() + j * k, x.data() + j * xb, k, fixed_scale);
          fast.pack(w.data(), rb, nw, k, packed.data());
          ASSERT_EQ(0, std::memcmp(packed.data() + 32 * rb, w.data() + 32 * rb, 5 * rb)) << "tail rows unchanged";
          std::vector<float> r(nw * nx);
          for (int64_t j = 0; j < nx; ++j)
            for (int64_t i = 0; i < nw; ++i) r[j * nw + i] = ref.dot(k, w.data() + i * rb, x.data() + j * xb);
          std::vector<float> y(nw * nx), yv(nw);
          fast.gemm(k, w.data(), rb, nw, x.data(), xb, nx, y.data(), nw);
          for (int64_t j = 0; j < nx; ++j) {
            fast.gemv(k, w.data(), rb, nw, x.data() + j * xb, yv.data());
            for (int64_t i = 0; i < nw; ++i) {
              ASSERT_EQ(fast.dot(k, w.data() + i * rb, x.data() + j * xb), r[j * nw + i]) << "dot " << i << "," << j;
              ASSERT_EQ(y[j * nw + i], r[j * nw + i]) << "gemm " << i << "," << j;
              ASSERT_EQ(yv[i], r[j * nw + i]) << "gemv row " << i << " x " << j;
            }
          }
          for (int64_t n_x : {1, 2, 3, 4, 8, 13}) {
            for (int64_t first : {0, 16}) {  // from either group start, into the tail
              std::vector<float> yp(nw * n_x, -1.f);
              fast.packed_gemm(k, packed.data() + first * rb, nw - first, x.data(), xb, n_x, yp.data(), nw);
              for (int64_t j = 0; j < n_x; ++j)
                for (int64_t i = first; i < nw; ++i)
                  ASSERT_EQ(yp[j * nw + i - first], r[j * nw + i]) << "packed n_x=" << n_x << " " << i << "," << j;
            }
          }
        }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(paths, fw_dot_simd_test,
                         ::testing::Values(simd_level::avx2, simd_level::avx2_vnni, simd_level::avx512),
                         [](const auto& info) { return std::string(to_string(info.param)); });

const char* no_amx() {
  const auto& f = host_features();
  if (!f.amx_int8) return "host has no AMX-INT8";
  if (!f.amx_os) return "the OS did not grant this process the AMX tile state";
  if (!f.has_amx()) return "host has AMX but not AVX-512 VNNI";
  return nullptr;
}

// The W8A8 product on AMX tiles equals the scalar reference bit for bit (so it equals the VNNI
// product too, and a row's result never depends on how many rows share the call): 16-row tiles,
// every shorter tile height, the rows below amx_min_rows, activation rows that are not dense,
// 32- and 64-channel activation groups with odd and even group counts, extreme codes, static
// scales, a product starting at either packed group and running into the unpacked tail, and
// nothing written outside y's rows and columns.
TEST(fw_dot_amx, w8a8_tiles_equal_the_reference_bit_for_bit) {
  if (const char* why = no_amx()) GTEST_SKIP() << why;
  const ggml_type t = ggml_type::fw_w8a8;
  const auto tiles = select_dot_kernel(t, simd_level::amx);
  const auto ref = select_dot_kernel(t, simd_level::scalar);
  ASSERT_TRUE(tiles.amx_int8);
  std::mt19937 rng(7);
  for (int64_t k : {32, 96, 128, 576, 1536})
    for (fill f : {fill::normal, fill::extreme})
      for (float fixed_scale : {0.f, 0.01f}) {
        SCOPED_TRACE("k=" + std::to_string(k) + (f == fill::extreme ? " extreme" : "") + (fixed_scale > 0 ? " static" : ""));
        const int64_t nw = 37, nx = 40, ldy = nw + 3;
        const size_t rb = row_bytes(type_traits(t), k), xb = act_row_bytes(tiles.act, k) + 64;
        const auto w = weight_rows(rng, t, k, nw, f);
        const auto xf32 = act_rows(rng, k, nx);
        std::vector<uint8_t> x(xb * nx), packed(rb * nw);
        for (int64_t j = 0; j < nx; ++j) ref.quantize_row(xf32.data() + j * k, x.data() + j * xb, k, fixed_scale);
        tiles.pack(w.data(), rb, nw, k, packed.data());
        std::vector<float> r(nw * nx);
        for (int64_t j = 0; j < nx; ++j)
          for (int64_t i = 0; i < nw; ++i) r[j * nw + i] = ref.dot(k, w.data() + i * rb, x.data() + j * xb);
        for (int64_t n_x : {1, 3, 4, 5, 9, 15, 16, 17, 20, 31, 32, 33, 40})
          for (int64_t first : {0, 16}) {
            std::vector<float> y((n_x + 1) * ldy, -3.f);
            tiles.packed_gemm(k, packed.data() + first * rb, nw - first, x.data(), xb, n_x, y.data(), ldy);
            for (int64_t j = 0; j <= n_x; ++j)
              for (int64_t i = 0; i < ldy; ++i) {
                const bool inside = j < n_x && i < nw - first;
                const float want = inside ? r[j * nw + first + i] : -3.f;
                ASSERT_EQ(std::memcmp(&y[j * ldy + i], &want, sizeof(float)), 0)
                    << "n_x=" << n_x << " first=" << first << " y[" << j << "][" << i << "] " << y[j * ldy + i]
                    << " vs " << want << (inside ? "" : " (outside the product)");
              }
          }
      }
}

TEST(fw_dot_amx, only_w8a8_at_the_amx_level_takes_the_tiles) {
  if (const char* why = no_amx()) GTEST_SKIP() << why;
  EXPECT_TRUE(select_dot_kernel(ggml_type::fw_w8a8, simd_level::amx).amx_int8);
  EXPECT_EQ(select_dot_kernel(ggml_type::fw_w8a8, simd_level::amx).level, simd_level::avx512);
  EXPECT_FALSE(select_dot_kernel(ggml_type::fw_w8a8, simd_level::avx512).amx_int8);  // FW_SIMD=avx512
  for (ggml_type t : {ggml_type::q4_0, ggml_type::q4_1, ggml_type::q8_0, ggml_type::f16, ggml_type::fw_w4a16_g128})
    EXPECT_FALSE(select_dot_kernel(t, simd_level::amx).amx_int8) << type_traits(t).name;
}

TEST(fw_dot_avx512, is_selected_on_a_vnni_host_and_capping_keeps_avx2) {
  if (const char* why = no_avx512_vnni()) GTEST_SKIP() << why;
  for (ggml_type t : fw_types) {
    const auto best = select_dot_kernel(t, simd_level::avx512);
    EXPECT_EQ(best.level, simd_level::avx512) << type_traits(t).name;
    EXPECT_NE(best.packed_gemm, nullptr) << type_traits(t).name;
    const auto capped = select_dot_kernel(t, simd_level::avx2);
    EXPECT_EQ(capped.level, simd_level::avx2) << type_traits(t).name;
    EXPECT_NE(capped.pack, nullptr) << type_traits(t).name << ": AVX2 has its own products on the packed layout";
  }
}

}  // namespace
}  // namespace fw::cpu
