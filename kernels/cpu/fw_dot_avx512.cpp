// AVX-512 (F/BW/VL) + VNNI kernels of flywheel's own formats on unpacked rows (dot, gemv, gemm;
// fw_dot_packed_avx512.cpp has the products on weights repacked at load, which is what the CPU
// backend runs). Same contract as the AVX2 path: integer sums exact in SIMD lanes, every float
// step in the reference's order (kernels/ref/fw_dot_ref), so results equal it bit for bit.
//
// - W8A8: vpdpbusd multiplies unsigned by signed bytes. The activations become unsigned by
//   flipping the top bit (x + 128) and the extra 128 * sum(w) of each 64-channel group is removed
//   through the accumulator's start value: one more vpdpbusd (ones x w) per weight row and group,
//   shared by the tile's activation rows. Weights and activations are both in [-127, 127], so
//   every product and sum fits (|sum| < 2^21 per group).
// - W4A16: the activations are int16, so the natural AVX-512 product is vpdpwssd (int16 pairs
//   into int32) on nibbles widened to int16: exact, and it keeps the integer units busy. A BF16
//   dot product (vdpbf16ps) would need the weights converted to bf16 and sums in float, which
//   cannot match the integer reference bit for bit and is no faster here (same 32 products per
//   instruction). A 32-element chunk is 16 nibble bytes -> [low nibbles, high nibbles] widened
//   = elements 0..31 in order, against one 64-byte activation load.
//
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized at inlined uses: a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "kernels/cpu/fw_dot.hpp"
#include "kernels/cpu/tile_drivers.hpp"
#include "kernels/format/fw_formats.hpp"

namespace fw::cpu::avx512 {
namespace {

using tiles::gemm_by_tiles;
using tiles::gemv_by_tiles;

inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

inline __m256i fold256(__m512i v) {
  return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

/// Four int32 vectors -> their four horizontal sums (exact: integer adds in any order).
inline __m128i hsum4_i32(__m512i a, __m512i b, __m512i c, __m512i d) {
  const __m256i ab = _mm256_hadd_epi32(fold256(a), fold256(b)), cd = _mm256_hadd_epi32(fold256(c), fold256(d));
  const __m256i s = _mm256_hadd_epi32(ab, cd);
  return _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

/// The float step of a tile's group end, for NW x NX pairs of exact integer sums `acc`:
/// res[i][j] = step(i, j, (float) sum(acc[i][j])). A 4-tile computes its four sums at once.
template <int NW, int NX, class Step>
inline void group_end(const __m512i (&acc)[NW][NX], float (&res)[NW][NX], Step&& step) {
  if constexpr (NW * NX == 4) {
    const __m512i* a = &acc[0][0];
    alignas(16) int32_t s[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(s), hsum4_i32(a[0], a[1], a[2], a[3]));
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) res[t / NX][t % NX] = step(t / NX, t % NX, static_cast<float>(s[t]), res[t / NX][t % NX]);
  } else {
#pragma GCC unroll 16
    for (int j = 0; j < NX; ++j)
#pragma GCC unroll 16
      for (int i = 0; i < NW; ++i)
        res[i][j] = step(i, j, static_cast<float>(_mm512_reduce_add_epi32(acc[i][j])), res[i][j]);
  }
}

// -- W8A8 --

/// G8: the activation group (64, or 32 when k % 64 != 0: then the upper half of each load is
/// masked to zero, which adds nothing to either sum).
template <int G8, int NW, int NX>
void tile_w8(int64_t k, const uint8_t* const* w, const uint8_t* const* x, float* out, int64_t ldo) {
  constexpr __mmask64 lanes = G8 == 64 ? ~__mmask64{0} : __mmask64{0xffffffffu};
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80)), ones = _mm512_set1_epi8(1);
  float res[NW][NX] = {};
  for (int64_t b = 0; b < k / G8; ++b) {
    __m512i xv[NX], acc[NW][NX];
#pragma GCC unroll 16
    for (int j = 0; j < NX; ++j)
      xv[j] = _mm512_xor_si512(_mm512_maskz_loadu_epi8(lanes, x[j] + act_row_header + b * G8), flip);
#pragma GCC unroll 16
    for (int i = 0; i < NW; ++i) {
      const __m512i wv = _mm512_maskz_loadu_epi8(lanes, w[i] + sizeof(w8_row_header) + b * G8);
      // start = -128 * sum(w) per lane, so start + sum((x + 128) w) = sum(x w).
      const __m512i start =
          _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, wv), 7));
#pragma GCC unroll 16
      for (int j = 0; j < NX; ++j) acc[i][j] = _mm512_dpbusd_epi32(start, xv[j], wv);
    }
    group_end<NW, NX>(acc, res, [&](int, int j, float s, float r) {
      return std::fma(reinterpret_cast<const float*>(x[j] + act_row_header + k)[b], s, r);
    });
  }
#pragma GCC unroll 16
  for (int i = 0; i < NW; ++i) {
    const float dw = load_f32(w[i]);
#pragma GCC unroll 16
    for (int j = 0; j < NX; ++j) out[j * ldo + i] = res[i][j] * dw;
  }
}

template <int G8>
void gemm_w8_g(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
               int64_t ldy) {
  gemm_by_tiles<tile_w8<G8, 1, 4>, tile_w8<G8, 1, 3>, tile_w8<G8, 1, 2>, tile_w8<G8, 1, 1>>(k, w, ws, nw, x, xs, nx,
                                                                                           y, ldy);
}

// -- W4A16 --

template <int G, int NW, int NX>
void tile_w4(int64_t k, const uint8_t* const* w, const uint8_t* const* x, float* out, int64_t ldo) {
  constexpr size_t gb = w4_group_bytes(G);
  const __m128i low = _mm_set1_epi8(0x0f);
  float res[NW][NX] = {};
  for (int64_t g = 0; g < k / G; ++g) {
    __m512i acc[NW][NX];
#pragma GCC unroll 16
    for (int i = 0; i < NW; ++i)
#pragma GCC unroll 16
      for (int j = 0; j < NX; ++j) acc[i][j] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int c = 0; c < G / 32; ++c) {
      __m512i wv[NW];
#pragma GCC unroll 16
      for (int i = 0; i < NW; ++i) {
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i] + g * gb + sizeof(w4_group_header) + c * 16));
        const __m256i nib = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low), _mm_and_si128(q, low));
        wv[i] = _mm512_cvtepu8_epi16(nib);
      }
#pragma GCC unroll 16
      for (int j = 0; j < NX; ++j) {
        const __m512i xv = _mm512_loadu_si512(x[j] + act_row_header + 2 * (g * G + c * 32));
#pragma GCC unroll 16
        for (int i = 0; i < NW; ++i) acc[i][j] = _mm512_dpwssd_epi32(acc[i][j], wv[i], xv);
      }
    }
    float xsum[NX];
#pragma GCC unroll 16
    for (int j = 0; j < NX; ++j) {
      const auto* sums = reinterpret_cast<const int32_t*>(x[j] + act_row_header + 2 * k) + g * (G / 32);
      int32_t s = 0;
#pragma GCC unroll 4
      for (int c = 0; c < G / 32; ++c) s += sums[c];
      xsum[j] = static_cast<float>(s);
    }
    group_end<NW, NX>(acc, res, [&](int i, int j, float s, float r) {
      const auto* h = reinterpret_cast<const w4_group_header*>(w[i] + g * gb);
      return r + std::fma(_cvtsh_ss(h->d), s, _cvtsh_ss(h->m) * xsum[j]);
    });
  }
#pragma GCC unroll 16
  for (int j = 0; j < NX; ++j) {
    const float dx = load_f32(x[j]);
#pragma GCC unroll 16
    for (int i = 0; i < NW; ++i) out[j * ldo + i] = res[i][j] * dx;
  }
}

}  // namespace

float dot_w8a8(int64_t k, const void* w, const void* x) {
  const uint8_t* wr[1] = {static_cast<const uint8_t*>(w)};
  const uint8_t* xr[1] = {static_cast<const uint8_t*>(x)};
  float r;
  if (act_i8_group(k) == 64)
    tile_w8<64, 1, 1>(k, wr, xr, &r, 1);
  else
    tile_w8<32, 1, 1>(k, wr, xr, &r, 1);
  return r;
}

void gemv_w8a8(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, float* out) {
  if (act_i8_group(k) == 64)
    gemv_by_tiles<tile_w8<64, 4, 1>, tile_w8<64, 1, 1>>(k, w, ws, nw, x, out);
  else
    gemv_by_tiles<tile_w8<32, 4, 1>, tile_w8<32, 1, 1>>(k, w, ws, nw, x, out);
}

void gemm_w8a8(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
               int64_t ldy) {
  if (act_i8_group(k) == 64)
    gemm_w8_g<64>(k, w, ws, nw, x, xs, nx, y, ldy);
  else
    gemm_w8_g<32>(k, w, ws, nw, x, xs, nx, y, ldy);
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

}  // namespace fw::cpu::avx512
