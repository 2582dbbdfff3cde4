// AVX2 kernels of flywheel's own formats (kernels/format/fw_formats.hpp), compiled with -mavx2
// -mfma -mf16c. Integer sums run in SIMD lanes and every float step happens in the reference's
// order (kernels/ref/fw_dot_ref), so each result equals the reference bit for bit. Products are
// register tiles of NW weight rows x NX activation rows: each loaded (and, for 4-bit, unpacked)
// weight chunk serves NX activation rows and each activation chunk NW weight rows.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/fw_dot.hpp"
#include "kernels/cpu/simd_avx2.hpp"
#include "kernels/cpu/tile_drivers.hpp"
#include "kernels/format/fw_formats.hpp"

namespace fw::cpu::avx2 {
namespace {

using tiles::gemm_by_tiles;
using tiles::gemv_by_tiles;

inline float fp16(uint16_t h) { return _cvtsh_ss(h); }

inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

/// max |x| over k floats (k % 8 == 0 handled in SIMD, the rest scalar).
inline float abs_max(const float* x, int64_t k) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  float r = hmax(m);
  for (; i < k; ++i) r = std::max(r, std::fabs(x[i]));
  return r;
}

/// Four int32 vectors -> their four horizontal sums.
inline __m128i hsum4_i32(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_hadd_epi32(a, b), cd = _mm256_hadd_epi32(c, d);
  const __m256i s = _mm256_hadd_epi32(ab, cd);
  return _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

/// The four (row, activation) pairs of a 4-tile, kept in one vector, back into res[i][j].
template <int NW, int NX>
inline void spill4(__m128 v, float (&res)[NW][NX]) {
  alignas(16) float r4[4];
  _mm_store_ps(r4, v);
#pragma GCC unroll 4
  for (int t = 0; t < 4; ++t) res[t / NX][t % NX] = r4[t];
}

// -- W8A8 --

template <int NW, int NX>
inline void tile_w8(int64_t k, const uint8_t* const* w, const uint8_t* const* x, float* out, int64_t ldo) {
  float res[NW][NX] = {};
  __m128 res4 = _mm_setzero_ps();  // the pairs of a 4-tile, t = i * NX + j
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t g = act_i8_group(k);
  for (int64_t b = 0; b < k / g; ++b) {
    __m256i acc[NW][NX];
#pragma GCC unroll 16
    for (int i = 0; i < NW; ++i)
#pragma GCC unroll 16
      for (int j = 0; j < NX; ++j) acc[i][j] = _mm256_setzero_si256();
    for (int64_t p = b * g; p < (b + 1) * g; p += 32) {
      __m256i xv[NX];
#pragma GCC unroll 16
      for (int j = 0; j < NX; ++j)
        xv[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j] + act_row_header + p));
#pragma GCC unroll 16
      for (int i = 0; i < NW; ++i) {
        const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i] + sizeof(w8_row_header) + p));
        const __m256i aw = _mm256_sign_epi8(wv, wv);
#pragma GCC unroll 16
        for (int j = 0; j < NX; ++j) {
          const __m256i prod = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(xv[j], wv));
          acc[i][j] = _mm256_add_epi32(acc[i][j], _mm256_madd_epi16(prod, ones));
        }
      }
    }
    // Group end: exact integer sums, then the reference's float step (vectorized over the four
    // (row, activation) pairs of a 4-tile: the same fma per pair).
    if constexpr (NW * NX == 4) {
      const __m256i* a = &acc[0][0];
      const __m128 isum = _mm_cvtepi32_ps(hsum4_i32(a[0], a[1], a[2], a[3]));
      alignas(16) float dg[4];
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) dg[t] = reinterpret_cast<const float*>(x[t % NX] + act_row_header + k)[b];
      res4 = _mm_fmadd_ps(_mm_load_ps(dg), isum, res4);
    } else {
#pragma GCC unroll 16
      for (int j = 0; j < NX; ++j) {
        const float dg = reinterpret_cast<const float*>(x[j] + act_row_header + k)[b];
#pragma GCC unroll 16
        for (int i = 0; i < NW; ++i) res[i][j] = std::fma(dg, static_cast<float>(hsum_i32(acc[i][j])), res[i][j]);
      }
    }
  }
  if constexpr (NW * NX == 4) spill4<NW, NX>(res4, res);
#pragma GCC unroll 16
  for (int i = 0; i < NW; ++i) {
    const float dw = load_f32(w[i]);
#pragma GCC unroll 16
    for (int j = 0; j < NX; ++j) out[j * ldo + i] = res[i][j] * dw;
  }
}

// -- W4A16 --

template <int G, int NW, int NX>
inline void tile_w4(int64_t k, const uint8_t* const* w, const uint8_t* const* x, float* out, int64_t ldo) {
  float res[NW][NX] = {};
  __m128 res4 = _mm_setzero_ps();  // the pairs of a 4-tile, t = i * NX + j
  const __m128i low = _mm_set1_epi8(0x0f);
  constexpr size_t gb = w4_group_bytes(G);
  for (int64_t g = 0; g < k / G; ++g) {
    __m256i acc[NW][NX];
    #pragma GCC unroll 16
    for (int i = 0; i < NW; ++i)
      #pragma GCC unroll 16
      for (int j = 0; j < NX; ++j) acc[i][j] = _mm256_setzero_si256();
    #pragma GCC unroll 4
    for (int c = 0; c < G / 32; ++c) {
      __m256i wl[NW], wh[NW];
      #pragma GCC unroll 16
      for (int i = 0; i < NW; ++i) {
        const __m128i b = _mm_loadu_si128(
            reinterpret_cast<const __m128i*>(w[i] + g * gb + sizeof(w4_group_header) + c * 16));
        wl[i] = _mm256_cvtepu8_epi16(_mm_and_si128(b, low));
        wh[i] = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(b, 4), low));
      }
      #pragma GCC unroll 16
      for (int j = 0; j < NX; ++j) {
        const auto* xq = reinterpret_cast<const __m256i*>(x[j] + act_row_header + 2 * (g * G + c * 32));
        const __m256i xl = _mm256_loadu_si256(xq), xh = _mm256_loadu_si256(xq + 1);
        #pragma GCC unroll 16
        for (int i = 0; i < NW; ++i)
          acc[i][j] = _mm256_add_epi32(acc[i][j],
                                       _mm256_add_epi32(_mm256_madd_epi16(wl[i], xl), _mm256_madd_epi16(wh[i], xh)));
      }
    }
    // Group end: the exact integer sums, then the reference's float step per (row, activation)
    // pair (vectorized over the four pairs of a 4-tile: the same operations per pair).
    int32_t xsum[NX];
#pragma GCC unroll 16
    for (int j = 0; j < NX; ++j) {
      const auto* sums = reinterpret_cast<const int32_t*>(x[j] + act_row_header + 2 * k) + g * (G / 32);
      xsum[j] = 0;
#pragma GCC unroll 4
      for (int c = 0; c < G / 32; ++c) xsum[j] += sums[c];
    }
    if constexpr (NW * NX == 4) {
      const __m256i* a = &acc[0][0];
      const __m128 isum = _mm_cvtepi32_ps(hsum4_i32(a[0], a[1], a[2], a[3]));
      alignas(16) float d4[4], m4[4], xs4[4];
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) {
        const auto* h = reinterpret_cast<const w4_group_header*>(w[t / NX] + g * gb);
        d4[t] = fp16(h->d), m4[t] = fp16(h->m), xs4[t] = static_cast<float>(xsum[t % NX]);
      }
      res4 = _mm_add_ps(res4, _mm_fmadd_ps(_mm_load_ps(d4), isum, _mm_mul_ps(_mm_load_ps(m4), _mm_load_ps(xs4))));
    } else {
#pragma GCC unroll 16
      for (int j = 0; j < NX; ++j)
#pragma GCC unroll 16
        for (int i = 0; i < NW; ++i) {
          const auto* h = reinterpret_cast<const w4_group_header*>(w[i] + g * gb);
          res[i][j] += std::fma(fp16(h->d), static_cast<float>(hsum_i32(acc[i][j])), fp16(h->m) * static_cast<float>(xsum[j]));
        }
    }
  }
  if constexpr (NW * NX == 4) spill4<NW, NX>(res4, res);
  for (int j = 0; j < NX; ++j) {
    const float dx = load_f32(x[j]);
    #pragma GCC unroll 16
    for (int i = 0; i < NW; ++i) out[j * ldo + i] = res[i][j] * dx;
  }
}

}  // namespace

void quantize_act_i8(const float* x, void* y, int64_t k, float fixed_scale) {
  const int64_t g = act_i8_group(k);
  const __m256 lo = _mm256_set1_ps(-127.f), hi = _mm256_set1_ps(127.f);
  auto* p = static_cast<uint8_t*>(y);
  auto* q = p + act_row_header;
  auto* scales = reinterpret_cast<float*>(p + act_row_header + k);
  float d_max = 0;
  for (int64_t b = 0; b < k / g; ++b) {
    const float* xs = x + b * g;
    const float d = fixed_scale > 0 ? fixed_scale : abs_max(xs, g) / 127.f;
    const __m256 id = _mm256_set1_ps(d > 0 ? 1.f / d : 0.f);
    auto conv = [&](const float* s) {  // clamp as floats (a static scale may overflow int32)
      const __m256 v =
          _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(s), id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
    };
    for (int64_t i = 0; i < g; i += 32) {
      __m256i a = _mm256_packs_epi32(conv(xs + i), conv(xs + i + 8));
      __m256i c = _mm256_packs_epi32(conv(xs + i + 16), conv(xs + i + 24));
      a = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, c), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * g + i), a);
    }
    scales[b] = d;
    d_max = std::max(d_max, d);
  }
  const act_row_head h{d_max};
  std::memcpy(p, &h, sizeof h);
}

void quantize_act_i16(const float* x, void* y, int64_t k, float) {
  const float d = abs_max(x, k) / 32767.f;
  const __m256 id = _mm256_set1_ps(d > 0 ? 1.f / d : 0.f);
  const __m256 lo = _mm256_set1_ps(-32767.f), hi = _mm256_set1_ps(32767.f);
  auto* p = static_cast<uint8_t*>(y);
  const act_row_head h{d};
  std::memcpy(p, &h, sizeof h);
  auto* q = reinterpret_cast<int16_t*>(p + act_row_header);
  auto* sums = reinterpret_cast<int32_t*>(p + act_row_header + 2 * k);
  auto conv = [&](const float* s) {
    const __m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(s), id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
  };
  for (int64_t c = 0; c < k / 32; ++c) {
    const float* s = x + c * 32;
    const __m256i a0 = conv(s), a1 = conv(s + 8), a2 = conv(s + 16), a3 = conv(s + 24);
    sums[c] = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)));
    const __m256i order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + c * 32),
                        _mm256_permutevar8x32_epi32(_mm256_packs_epi32(a0, a1), order));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + c * 32 + 16),
                        _mm256_permutevar8x32_epi32(_mm256_packs_epi32(a2, a3), order));
  }
}

float dot_w8a8(int64_t k, const void* w, const void* x) {
  const uint8_t* wr[1] = {static_cast<const uint8_t*>(w)};
  const uint8_t* xr[1] = {static_cast<const uint8_t*>(x)};
  float r;
  tile_w8<1, 1>(k, wr, xr, &r, 1);
  return r;
}

void gemv_w8a8(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, float* out) {
  gemv_by_tiles<tile_w8<4, 1>, tile_w8<1, 1>>(k, w, ws, nw, x, out);
}

void gemm_w8a8(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
               int64_t ldy) {
  gemm_by_tiles<tile_w8<1, 4>, tile_w8<1, 3>, tile_w8<1, 2>, tile_w8<1, 1>>(k, w, ws, nw, x, xs, nx, y, ldy);
}

template <int G>
float dot_w4a16(int64_t k, const void* w, const void* x) {
  const uint8_t* wr[1] = {static_cast<const uint8_t*>(w)};
  const uint8_t* xr[1] = {static_cast<const uint8_t*>(x)};
  float r;
  tile_w4<G, 1, 1>(k, wr, xr, &r, 1);
  return r;
}

template <int G>
void gemv_w4a16(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, float* out) {
  gemv_by_tiles<tile_w4<G, 4, 1>, tile_w4<G, 1, 1>>(k, w, ws, nw, x, out);
}

template <int G>
void gemm_w4a16(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
                int64_t ldy) {
  gemm_by_tiles<tile_w4<G, 1, 4>, tile_w4<G, 1, 3>, tile_w4<G, 1, 2>, tile_w4<G, 1, 1>>(k, w, ws, nw, x, xs, nx, y,
                                                                                       ldy);
}

#define FW_INSTANTIATE_W4(G)                                                                                \
  template float dot_w4a16<G>(int64_t, const void*, const void*);                                           \
  template void gemv_w4a16<G>(int64_t, const void*, size_t, int64_t, const void*, float*);                  \
  template void gemm_w4a16<G>(int64_t, const void*, size_t, int64_t, const void*, size_t, int64_t, float*, \
                              int64_t);
FW_INSTANTIATE_W4(32)
FW_INSTANTIATE_W4(64)
FW_INSTANTIATE_W4(128)
#undef FW_INSTANTIATE_W4

}  // namespace fw::cpu::avx2
