// Packed fw_w8a8 / fw_w4a16 weights for AVX-512 VNNI: rows interleaved in groups of 16 so that
// int32 lane r of every vector belongs to row r of the group (the idea of
// vec_dot_packed_avx512.cpp for the ggml formats). A broadcast piece of one activation row then
// advances all 16 rows' integer sums with one instruction, and a group of channels ends with one
// convert and the reference's float step for 16 rows at once: no shuffles, no horizontal sums.
// Each lane performs exactly the reference's steps for its row (integer sums exact, then the same
// fma / mul / add sequence per group), so results equal kernels/ref/fw_dot_ref bit for bit.
//
// Layouts (made by fw_packed_rows.cpp, which the AVX2 path reads too; a group of 16 rows keeps its
// 16 * row_bytes bytes and its place; rows after the last whole group stay unpacked):
//  w8a8 (row: 32-byte header + k int8): for each 4-channel piece p 64 bytes: piece p of row r at
//    byte 64 p + 4 r, stored as w + 128 (u8, the unsigned operand of vpdpbusd; the activation is
//    the signed one); then the 16 float row scales and zeros up to the group's end (read last, so
//    the stream of pieces runs on from one group into the next: with the scales first, decode at
//    k = 576 ran ~20% slower). The extra
//    128 * sum(x) of each activation group is the accumulator's start value (-128 * sum(x)),
//    computed once per activation row and call.
//  w4a16 g (row: k / g groups of 4 + g / 2 bytes): per group 16 fp16 scales, 16 fp16 offsets,
//    then g / 8 vectors; vector v holds channels 8 v .. 8 v + 7 of row r in lane r as bytes
//    [e0 | e2 << 4, e4 | e6 << 4, e1 | e3 << 4, e5 | e7 << 4], so (v >> 4 t) & 0x000f000f is the
//    int16 pair (e_2t, e_2t+1) for vpdpwssd against the broadcast activation pair.
//
// Register tiles: 16 rows x up to 8 activation rows; short tiles (decode) split each integer sum
// over several chains so the instruction latency stays hidden.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 AVX-512 header false positive
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "kernels/cpu/fw_dot.hpp"
#include "kernels/cpu/fw_packed_rows.hpp"
#include "kernels/cpu/tile_drivers.hpp"
#include "kernels/cpu/vec_dot.hpp"
#include "kernels/format/fw_formats.hpp"

namespace fw::cpu::avx512 {
namespace {

constexpr int group = static_cast<int>(packed_group_rows);

// Software prefetch 3 KB ahead (the ggml packed kernels' measured distance) at every tile size:
// unlike there it also paid off for 1-row tiles here (decode, one core, weights from DRAM: w8a8
// k = 1536 25.8 -> 40 GB/s; w4a16 within noise).
constexpr size_t prefetch_ahead = 3072;

/// Independent integer chains per activation row: enough to cover the dot-product latency.
constexpr int chains_for(int rx) { return rx == 1 ? 4 : rx <= 3 ? 2 : 1; }

inline __m512i bcast32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

inline void prefetch_span(const uint8_t* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T0);
}

// -- W8A8 --

/// G8: the activation group (act_i8_group(k)). xneg: -128 * sum(x) per activation row and group.
template <int G8, int RX>
void tile_w8(int64_t k, const uint8_t* gp, const uint8_t* x, size_t xs, const int32_t* xneg, float* y, int64_t ldy) {
  constexpr int pieces = G8 / 4, C = chains_for(RX);
  const int64_t ng = k / G8;
  const uint8_t* wq = gp;
  __m512 acc[RX];
#pragma GCC unroll 8
  for (int j = 0; j < RX; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t b = 0; b < ng; ++b, wq += 16 * G8) {
    prefetch_span(wq + prefetch_ahead, 16 * G8);
    __m512i a[C][RX];
#pragma GCC unroll 8
    for (int j = 0; j < RX; ++j) {
      a[0][j] = _mm512_set1_epi32(xneg[j * ng + b]);
#pragma GCC unroll 4
      for (int c = 1; c < C; ++c) a[c][j] = _mm512_setzero_si512();
    }
#pragma GCC unroll 16
    for (int p = 0; p < pieces; ++p) {
      const __m512i wv = _mm512_loadu_si512(wq + 64 * p);
#pragma GCC unroll 8
      for (int j = 0; j < RX; ++j)
        a[p % C][j] = _mm512_dpbusd_epi32(a[p % C][j], wv, bcast32(x + j * xs + act_row_header + b * G8 + 4 * p));
    }
#pragma GCC unroll 8
    for (int j = 0; j < RX; ++j) {
      __m512i s = a[0][j];
#pragma GCC unroll 4
      for (int c = 1; c < C; ++c) s = _mm512_add_epi32(s, a[c][j]);
      const float dg = reinterpret_cast<const float*>(x + j * xs + act_row_header + k)[b];
      acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(dg), _mm512_cvtepi32_ps(s), acc[j]);
    }
  }
  const __m512 dw = _mm512_loadu_ps(gp + 16 * k);
#pragma GCC unroll 8
  for (int j = 0; j < RX; ++j) _mm512_storeu_ps(y + j * ldy, _mm512_mul_ps(acc[j], dw));
}

template <int G8>
void packed_gemm_w8_g(int64_t k, const uint8_t* wp, int64_t n_packed, const uint8_t* xp, size_t xs, int64_t nx,
                      float* y, int64_t ldy) {
  const int64_t ng = k / G8;
  const size_t rb = sizeof(w8_row_header) + static_cast<size_t>(k);
  thread_local std::vector<int32_t> xneg;
  xneg.resize(static_cast<size_t>(nx * ng));
  w8_group_xneg(k, xp, xs, nx, xneg.data());
  for (int64_t g = 0; g < n_packed; g += group)
    tiles::for_row_tiles(nx, [&]<int RX>(int64_t j) {
      tile_w8<G8, RX>(k, wp + g * rb, xp + j * xs, xs, xneg.data() + j * ng, y + j * ldy + g, ldy);
    });
}

// -- W4A16 --

using packed::w4_block;

/// xsum: (float) sum(x) per activation row and group of G channels.
template <int G, int RX>
void tile_w4(int64_t k, const uint8_t* gp, const uint8_t* x, size_t xs, const float* xsum, float* y, int64_t ldy) {
  constexpr int vecs = G / 8, C = chains_for(RX);
  const int64_t ng = k / G;
  const __m512i mask = _mm512_set1_epi32(0x000f000f);
  __m512 acc[RX];
#pragma GCC unroll 8
  for (int j = 0; j < RX; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t g = 0; g < ng; ++g, gp += w4_block<G>) {
    prefetch_span(gp + prefetch_ahead, w4_block<G>);
    __m512i a[C][RX];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c)
#pragma GCC unroll 8
      for (int j = 0; j < RX; ++j) a[c][j] = _mm512_setzero_si512();
#pragma GCC unroll 16
    for (int v = 0; v < vecs; ++v) {
      const __m512i q = _mm512_loadu_si512(gp + 64 + 64 * v);
      const __m512i w[4] = {_mm512_and_si512(q, mask), _mm512_and_si512(_mm512_srli_epi32(q, 4), mask),
                            _mm512_and_si512(_mm512_srli_epi32(q, 8), mask),
                            _mm512_and_si512(_mm512_srli_epi32(q, 12), mask)};
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t)
#pragma GCC unroll 8
        for (int j = 0; j < RX; ++j) {
          const uint8_t* xe = x + j * xs + act_row_header + 2 * (g * G + 8 * v + 2 * t);
          a[(4 * v + t) % C][j] = _mm512_dpwssd_epi32(a[(4 * v + t) % C][j], w[t], bcast32(xe));
        }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gp)));
    const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gp + 32)));
#pragma GCC unroll 8
    for (int j = 0; j < RX; ++j) {
      __m512i s = a[0][j];
#pragma GCC unroll 4
      for (int c = 1; c < C; ++c) s = _mm512_add_epi32(s, a[c][j]);
      const __m512 mx = _mm512_mul_ps(m, _mm512_set1_ps(xsum[j * ng + g]));
      acc[j] = _mm512_add_ps(acc[j], _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), mx));
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < RX; ++j) {
    float dx;
    std::memcpy(&dx, x + j * xs, 4);
    _mm512_storeu_ps(y + j * ldy, _mm512_mul_ps(acc[j], _mm512_set1_ps(dx)));
  }
}

}  // namespace

void w8_group_xneg(int64_t k, const void* x, size_t xs, int64_t nx, int32_t* out) {
  const int64_t g8 = act_i8_group(k), ng = k / g8;
  const __mmask64 lanes = g8 == 64 ? ~__mmask64{0} : __mmask64{0xffffffffu};
  const __m512i ones = _mm512_set1_epi8(1);
  const auto* xp = static_cast<const uint8_t*>(x);
  for (int64_t j = 0; j < nx; ++j)
    for (int64_t b = 0; b < ng; ++b) {
      const __m512i v = _mm512_maskz_loadu_epi8(lanes, xp + j * xs + act_row_header + b * g8);
      out[j * ng + b] = -128 * _mm512_reduce_add_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, v));
    }
}

void packed_gemm_w8a8(int64_t k, const void* w, int64_t n_rows, const void* x, size_t xs, int64_t nx, float* y,
                      int64_t ldy) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  const size_t rb = sizeof(w8_row_header) + static_cast<size_t>(k);
  const int64_t n_packed = n_rows / group * group;
  if (act_i8_group(k) == 64)
    packed_gemm_w8_g<64>(k, wp, n_packed, xp, xs, nx, y, ldy);
  else
    packed_gemm_w8_g<32>(k, wp, n_packed, xp, xs, nx, y, ldy);
  if (n_packed < n_rows) gemm_w8a8(k, wp + n_packed * rb, rb, n_rows - n_packed, x, xs, nx, y + n_packed, ldy);
}

template <int G>
void packed_gemm_w4a16(int64_t k, const void* w, int64_t n_rows, const void* x, size_t xs, int64_t nx, float* y,
                       int64_t ldy) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  const int64_t ng = k / G;
  const size_t rb = static_cast<size_t>(ng) * w4_group_bytes(G);
  const int64_t n_packed = n_rows / group * group;
  const float* xsum = packed::w4_group_xsums(x, xs, nx, k, G);  // once per call
  for (int64_t g0 = 0; g0 < n_packed; g0 += group)
    tiles::for_row_tiles(nx, [&]<int RX>(int64_t j) {
      tile_w4<G, RX>(k, wp + g0 * rb, xp + j * xs, xs, xsum + j * ng, y + j * ldy + g0, ldy);
    });
  if (n_packed < n_rows) gemm_w4a16<G>(k, wp + n_packed * rb, rb, n_rows - n_packed, x, xs, nx, y + n_packed, ldy);
}

#define FW_INSTANTIATE_W4(G)                                                              \
  template void packed_gemm_w4a16<G>(int64_t, const void*, int64_t, const void*, size_t, \
                                     int64_t, float*, int64_t);
FW_INSTANTIATE_W4(32)
FW_INSTANTIATE_W4(64)
FW_INSTANTIATE_W4(128)
#undef FW_INSTANTIATE_W4

}  // namespace fw::cpu::avx512
