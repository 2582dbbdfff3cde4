// Packed weights for AVX-512 VNNI: rows interleaved in groups of 16 so that int32 lane r of every
// vector belongs to row r of the group. For block b of a group the 4-byte pieces of all 16 rows sit
// side by side in one zmm (piece t of row r at byte 64 t + 4 r), followed by the 16 fp16 scales
// (and q4_1's 16 mins). One vpdpbusd with a broadcast 4-byte piece of the activation block then
// advances all 16 rows' integer dot products, and a block ends with one convert and one multiply-
// add for 16 rows: no shuffles and no horizontal sums. (The same idea as llama.cpp's repacked
// Q4_0 "x16" layouts.)
//
//   q4_0: 4 x 64 bytes of nibbles, then d[16]          = 288 bytes = 16 blocks of 18
//   q4_1: 4 x 64 bytes of nibbles, then d[16], m[16]   = 320 bytes = 16 blocks of 20
//   q8_0: 8 x 64 bytes of int8,    then d[16]          = 544 bytes = 16 blocks of 34
//
// Nibble piece t holds elements 4t..4t+3 (low nibbles) and 16+4t..16+4t+3 (high nibbles) of each
// row, matching the activation bytes qs[4t..] and qs[16+4t..]. Offsets are folded into the integer
// accumulator's start value, as in vec_dot_avx512.cpp: q4_0 -8 * sum(x), q8_0 (stored + 128)
// -128 * sum(x).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 AVX-512 header false positive
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/vec_dot.hpp"

namespace fw::cpu::avx512 {
namespace {

constexpr int group = static_cast<int>(packed_group_rows);

struct q4_0_packed {
  using block = block_q4_0;
  static constexpr size_t group_block = group * sizeof(block);  // 288
  static constexpr size_t d_offset = 256;
  static constexpr bool has_min = false;
  static void put(const block& s, int r, uint8_t* gb) {
    for (int t = 0; t < 4; ++t) std::memcpy(gb + 64 * t + 4 * r, s.qs + 4 * t, 4);
    std::memcpy(gb + d_offset + 2 * r, &s.d, 2);
  }
  // w[p] pairs with activation piece p (qs[4p..4p+3]).
  static void weights(const uint8_t* gb, __m512i w[8]) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    for (int t = 0; t < 4; ++t) {
      const __m512i v = _mm512_loadu_si512(gb + 64 * t);
      w[t] = _mm512_and_si512(v, m4);
      w[4 + t] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    }
  }
  static __m512i bias(int32_t sum) { return _mm512_set1_epi32(-8 * sum); }
  static constexpr auto unpacked_gemm = gemm_q4_0;
};

struct q4_1_packed {
  using block = block_q4_1;
  static constexpr size_t group_block = group * sizeof(block);  // 320
  static constexpr size_t d_offset = 256, m_offset = 288;
  static constexpr bool has_min = true;
  static void put(const block& s, int r, uint8_t* gb) {
    for (int t = 0; t < 4; ++t) std::memcpy(gb + 64 * t + 4 * r, s.qs + 4 * t, 4);
    std::memcpy(gb + d_offset + 2 * r, &s.d, 2);
    std::memcpy(gb + m_offset + 2 * r, &s.m, 2);
  }
  static void weights(const uint8_t* gb, __m512i w[8]) { q4_0_packed::weights(gb, w); }
  static __m512i bias(int32_t) { return _mm512_setzero_si512(); }
  static constexpr auto unpacked_gemm = gemm_q4_1;
};

struct q8_0_packed {
  using block = block_q8_0;
  static constexpr size_t group_block = group * sizeof(block);  // 544
  static constexpr size_t d_offset = 512;
  static constexpr bool has_min = false;
  static void put(const block& s, int r, uint8_t* gb) {
    for (int t = 0; t < 8; ++t) std::memcpy(gb + 64 * t + 4 * r, s.qs + 4 * t, 4);
    std::memcpy(gb + d_offset + 2 * r, &s.d, 2);
  }
  static void weights(const uint8_t* gb, __m512i w[8]) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int t = 0; t < 8; ++t) w[t] = _mm512_xor_si512(_mm512_loadu_si512(gb + 64 * t), flip);
  }
  static __m512i bias(int32_t sum) { return _mm512_set1_epi32(-128 * sum); }
  static constexpr auto unpacked_gemm = gemm_q8_0;
};

template <class F>
void pack(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst) {
  using block = typename F::block;
  const int64_t nb = k / 32;
  const size_t rb = static_cast<size_t>(nb) * sizeof(block);
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  const int64_t n_packed = n_rows / group * group;
  for (int64_t g = 0; g < n_packed; g += group) {
    uint8_t* gp = d + g * rb;
    for (int64_t b = 0; b < nb; ++b) {
      for (int r = 0; r < group; ++r)
        F::put(reinterpret_cast<const block*>(s + (g + r) * row_stride)[b], r, gp + b * F::group_block);
    }
  }
  for (int64_t i = n_packed; i < n_rows; ++i) std::memcpy(d + i * rb, s + i * row_stride, rb);
}

// y[j * ldy + r] for the 16 rows of one group and RX activation rows.
template <class F, int RX>
void group_tile(int64_t nb, const uint8_t* gp, const uint8_t* x, size_t x_stride, float* y, int64_t ldy) {
  __m512 acc[RX];
  for (int j = 0; j < RX; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b, gp += F::group_block) {
    __m512i w[8];
    F::weights(gp, w);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gp + F::d_offset)));
    __m512 mw = _mm512_setzero_ps();
    if constexpr (F::has_min)
      mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gp + F::m_offset)));
    for (int j = 0; j < RX; ++j) {
      const block_q8x& xb = reinterpret_cast<const block_q8x*>(x + j * x_stride)[b];
      int32_t q[8];
      std::memcpy(q, xb.qs, sizeof q);
      // Two independent chains of four.
      __m512i a0 = F::bias(xb.sum), a1 = _mm512_setzero_si512();
      for (int p = 0; p < 4; ++p) {
        a0 = _mm512_dpbusd_epi32(a0, w[p], _mm512_set1_epi32(q[p]));
        a1 = _mm512_dpbusd_epi32(a1, w[4 + p], _mm512_set1_epi32(q[4 + p]));
      }
      const __m512 s = _mm512_cvtepi32_ps(_mm512_add_epi32(a0, a1));
      acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(xb.d)), s, acc[j]);
      if constexpr (F::has_min)
        acc[j] = _mm512_fmadd_ps(mw, _mm512_set1_ps(xb.d * static_cast<float>(xb.sum)), acc[j]);
    }
  }
  for (int j = 0; j < RX; ++j) _mm512_storeu_ps(y + j * ldy, acc[j]);
}

template <class F>
void packed_gemm(int64_t k, const void* w, int64_t n_rows, const void* x, size_t x_stride, int64_t n_x, float* y,
                 int64_t ldy) {
  const int64_t nb = k / 32;
  const size_t rb = static_cast<size_t>(nb) * sizeof(typename F::block);
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  const int64_t n_packed = n_rows / group * group;
  for (int64_t g = 0; g < n_packed; g += group) {
    const uint8_t* gp = wp + g * rb;
    int64_t j = 0;
    for (; j + 4 <= n_x; j += 4) group_tile<F, 4>(nb, gp, xp + j * x_stride, x_stride, y + j * ldy + g, ldy);
    switch (n_x - j) {
      case 3: group_tile<F, 3>(nb, gp, xp + j * x_stride, x_stride, y + j * ldy + g, ldy); break;
      case 2: group_tile<F, 2>(nb, gp, xp + j * x_stride, x_stride, y + j * ldy + g, ldy); break;
      case 1: group_tile<F, 1>(nb, gp, xp + j * x_stride, x_stride, y + j * ldy + g, ldy); break;
      default: break;
    }
  }
  if (n_packed < n_rows)
    F::unpacked_gemm(k, wp + n_packed * rb, rb, n_rows - n_packed, x, x_stride, n_x, y + n_packed, ldy);
}

}  // namespace

void pack_q4_0(const void* src, size_t rs, int64_t n, int64_t k, void* dst) { pack<q4_0_packed>(src, rs, n, k, dst); }
void pack_q4_1(const void* src, size_t rs, int64_t n, int64_t k, void* dst) { pack<q4_1_packed>(src, rs, n, k, dst); }
void pack_q8_0(const void* src, size_t rs, int64_t n, int64_t k, void* dst) { pack<q8_0_packed>(src, rs, n, k, dst); }

void packed_gemm_q4_0(int64_t k, const void* w, int64_t n, const void* x, size_t xs, int64_t nx, float* y, int64_t ldy) {
  packed_gemm<q4_0_packed>(k, w, n, x, xs, nx, y, ldy);
}
void packed_gemm_q4_1(int64_t k, const void* w, int64_t n, const void* x, size_t xs, int64_t nx, float* y, int64_t ldy) {
  packed_gemm<q4_1_packed>(k, w, n, x, xs, nx, y, ldy);
}
void packed_gemm_q8_0(int64_t k, const void* w, int64_t n, const void* x, size_t xs, int64_t nx, float* y, int64_t ldy) {
  packed_gemm<q8_0_packed>(k, w, n, x, xs, nx, y, ldy);
}

}  // namespace fw::cpu::avx512
