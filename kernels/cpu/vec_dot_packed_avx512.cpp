// Packed weights for AVX-512 VNNI (the layout of kernels/cpu/packed_rows.hpp: rows interleaved
// in groups of 16, int32 lane r of every vector belongs to row r). One vpdpbusd with a broadcast
// 4-byte piece of the activation block advances all 16 rows' integer dot products, and a block
// ends with one convert and one multiply-add for 16 rows: no shuffles and no horizontal sums. (The
// same idea as llama.cpp's repacked Q4_0 "x16" layouts.) The unsigned operand of vpdpbusd is the
// weight: q4 nibbles as stored (q4_0: value + 8), q8_0 flipped to value + 128 at load. The offsets
// are removed from the integer sum at the end of the block: -(sum(x) << 3) and -(sum(x) << 7).
//
// Register tiles: 8 activation rows per pass over a group (unrolled at compile time so the
// accumulators stay in registers: the project builds with -O2, which does not unroll). Measured
// on the 2-core EPYC: ~140 GMAC/s per core for 4..64 rows (vpdpbusd peak ~226), 2.4x the
// previous 4-row tile that the compiler had spilled to the stack.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 AVX-512 header false positive
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/packed_rows.hpp"
#include "kernels/cpu/tile_drivers.hpp"
#include "kernels/cpu/vec_dot.hpp"

namespace fw::cpu::avx512 {
namespace {

constexpr int group = static_cast<int>(packed_group_rows);

struct q4_0_packed : packed::q4_0_layout {
  static constexpr size_t m_offset = 0;
  static constexpr bool has_min = false, nibbles = true;
  static constexpr int offset_shift = 3;  // stored nibble = value + 8
  static constexpr auto unpacked_gemm = gemm_q4_0;
};

struct q4_1_packed : packed::q4_1_layout {
  static constexpr bool has_min = true, nibbles = true;
  static constexpr int offset_shift = 0;
  static constexpr auto unpacked_gemm = gemm_q4_1;
};

struct q8_0_packed : packed::q8_0_layout {
  static constexpr size_t m_offset = 0;
  static constexpr bool has_min = false, nibbles = false;
  static constexpr int offset_shift = 7;  // flipped to unsigned: stored byte = value + 128
  static constexpr auto unpacked_gemm = gemm_q8_0;
};

using tiles::for_row_tiles;

// Software prefetch 3 KB ahead. Tiles of 4 or more activation rows spend long enough on each
// block that the hardware prefetcher falls behind (a 1 MB matrix set streamed from DRAM, one
// core: 8 rows 8.3 -> 6.1 ms, 4 rows 4.3 -> 3.9 ms): they always prefetch. Tiles of 1-3 rows do
// where cpu::prefetch_small_tiles() says so (Intel: decode ~2x faster with it; AMD EPYC: 5-25%
// slower, 2026-12-06). L1 hint (T0) beat T1/T2 by 10-20%; 2-6 KB ahead all within noise of 3 KB.
constexpr size_t prefetch_ahead = 3072;

// Broadcast of the 4 activation bytes qs[4 p .. 4 p + 3] (folded into vpdpbusd as {1to16}).
inline __m512i piece(const block_q8x& xb, int p) {
  int32_t v;
  std::memcpy(&v, xb.qs + 4 * p, 4);
  return _mm512_set1_epi32(v);
}

// y[j * ldy + r] for the 16 rows of one group and RX activation rows. Per block the weights are
// unpacked once (one piece pair at a time) and used by all RX rows; every row keeps one integer
// chain per block (two when RX is small, so the vpdpbusd latency stays hidden) and finishes the
// block with a convert and two multiply-adds. All loops are unrolled at compile time so the
// accumulators live in registers (the project builds with -O2, which does not unroll by itself).
// xs (q4_1 only): d_x * sum(x) per activation row and block, nb floats per row, computed once
// per product by packed_gemm (saves a convert and a multiply per row and block here).
template <class F, int RX, bool Prefetch>
void group_tile(int64_t nb, const uint8_t* gp, const uint8_t* x, size_t x_stride, float* y, int64_t ldy,
                const float* xs = nullptr) {
  constexpr bool two_chains = RX <= 4;
  __m512 acc[RX];
#pragma GCC unroll 16
  for (int j = 0; j < RX; ++j) acc[j] = _mm512_setzero_ps();
  const block_q8x* xr[RX];
#pragma GCC unroll 16
  for (int j = 0; j < RX; ++j) xr[j] = reinterpret_cast<const block_q8x*>(x + j * x_stride);
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t b = 0; b < nb; ++b, gp += F::group_block) {
    if constexpr (Prefetch) {
#pragma GCC unroll 16
      for (size_t off = 0; off < F::group_block; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(gp + prefetch_ahead + off), _MM_HINT_T0);
    }
    __m512i a0[RX], a1[RX];
#pragma GCC unroll 16
    for (int j = 0; j < RX; ++j) {
      a0[j] = _mm512_setzero_si512();
      if constexpr (two_chains) a1[j] = _mm512_setzero_si512();
    }
    constexpr int pairs = 4;  // q4: 4 loads of low/high nibbles; q8_0: 4 pairs of loads
#pragma GCC unroll 4
    for (int t = 0; t < pairs; ++t) {
      __m512i wl, wh;
      int pl, ph;
      if constexpr (F::nibbles) {
        const __m512i v = _mm512_loadu_si512(gp + 64 * t);
        wl = _mm512_and_si512(v, m4);
        wh = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        pl = t, ph = 4 + t;
      } else {
        wl = _mm512_xor_si512(_mm512_loadu_si512(gp + 128 * t), flip);
        wh = _mm512_xor_si512(_mm512_loadu_si512(gp + 128 * t + 64), flip);
        pl = 2 * t, ph = 2 * t + 1;
      }
#pragma GCC unroll 16
      for (int j = 0; j < RX; ++j) {
        const block_q8x& xb = xr[j][b];
        a0[j] = _mm512_dpbusd_epi32(a0[j], wl, piece(xb, pl));
        if constexpr (two_chains)
          a1[j] = _mm512_dpbusd_epi32(a1[j], wh, piece(xb, ph));
        else
          a0[j] = _mm512_dpbusd_epi32(a0[j], wh, piece(xb, ph));
      }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gp + F::d_offset)));
    __m512 mw = _mm512_setzero_ps();
    if constexpr (F::has_min)
      mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gp + F::m_offset)));
#pragma GCC unroll 16
    for (int j = 0; j < RX; ++j) {
      const block_q8x& xb = xr[j][b];
      __m512i a = two_chains ? _mm512_add_epi32(a0[j], a1[j]) : a0[j];
      // Offsets of the stored weights (q4_0: +8, q8_0: +128) times the block's activation sum.
      if constexpr (F::offset_shift > 0)
        a = _mm512_sub_epi32(a, _mm512_slli_epi32(_mm512_set1_epi32(xb.sum), F::offset_shift));
      const __m512 xd = _mm512_set1_ps(xb.d);
      acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(dw, xd), _mm512_cvtepi32_ps(a), acc[j]);
      if constexpr (F::has_min) {
        // The min term as d_x * sum(x) in float, added on its own (rounding fp16 like llama.cpp's
        // q8_1 or folding it into one product measured further from llama.cpp's greedy output).
        acc[j] = _mm512_fmadd_ps(mw, _mm512_set1_ps(xs[j * nb + b]), acc[j]);
      }
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < RX; ++j) _mm512_storeu_ps(y + j * ldy, acc[j]);
}

template <class F>
void packed_gemm(int64_t k, const void* w, int64_t n_rows, const void* x, size_t x_stride, int64_t n_x, float* y,
                 int64_t ldy) {
  const int64_t nb = k / 32;
  const size_t rb = static_cast<size_t>(nb) * (F::group_block / group);
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  const int64_t n_packed = n_rows / group * group;
  const float* xs = F::has_min ? packed::q8x_min_terms(x, x_stride, n_x, nb) : nullptr;
  const bool prefetch_small = prefetch_small_tiles();
  for (int64_t g = 0; g < n_packed; g += group) {
    const uint8_t* gp = wp + g * rb;
    for_row_tiles(n_x, [&]<int RX>(int64_t j) {
      const float* xsj = xs ? xs + j * nb : nullptr;
      if (RX >= 4 || prefetch_small)
        group_tile<F, RX, true>(nb, gp, xp + j * x_stride, x_stride, y + j * ldy + g, ldy, xsj);
      else
        group_tile<F, RX, false>(nb, gp, xp + j * x_stride, x_stride, y + j * ldy + g, ldy, xsj);
    });
  }
  if (n_packed < n_rows)
    F::unpacked_gemm(k, wp + n_packed * rb, rb, n_rows - n_packed, x, x_stride, n_x, y + n_packed, ldy);
}

// -- float weights (f32, f16, bf16) --
// Rows interleaved per element: within a group, element i of the 16 rows is 16 values side by side
// (64 bytes for f32, 32 for f16 / bf16), so one load and convert gives lane r = row r and the
// product is an outer product: acc[j] += x_j[i] * w_i for every activation row j. No horizontal
// sums; each weight vector serves RX activation rows and each broadcast activation 16 rows.
struct f32_packed {
  using elem = float;
  static __m512 load(const uint8_t* p) { return _mm512_loadu_ps(p); }
  static constexpr auto unpacked_gemm = gemm_f32;
};
struct f16_packed {
  using elem = uint16_t;
  static __m512 load(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static constexpr auto unpacked_gemm = gemm_f16;
};
struct bf16_packed {
  using elem = uint16_t;
  static __m512 load(const uint8_t* p) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static constexpr auto unpacked_gemm = gemm_bf16;
};

// y[j * ldy + r] for the 16 rows of one group and RX float activation rows; two accumulator sets
// (even and odd elements) keep 2 RX independent FMA chains in flight. Weights prefetched 3 KB
// ahead like the block formats' (Intel Xeon host, f16 SmolLM2, binaries alternating: decode
// 34-35 -> 48-50 t/s at 1 thread, 58-61 -> 78-85 at 2).
template <class F, int RX, bool Prefetch>
void float_tile(int64_t k, const uint8_t* gp, const uint8_t* x, size_t x_stride, float* y, int64_t ldy) {
  constexpr size_t step = group * sizeof(typename F::elem);
  __m512 a0[RX], a1[RX];
  const float* xr[RX];
#pragma GCC unroll 16
  for (int j = 0; j < RX; ++j) {
    a0[j] = _mm512_setzero_ps(), a1[j] = _mm512_setzero_ps();
    xr[j] = reinterpret_cast<const float*>(x + j * x_stride);
  }
  int64_t i = 0;
  for (; i + 2 <= k; i += 2, gp += 2 * step) {
    if constexpr (Prefetch) {
#pragma GCC unroll 2
      for (size_t off = 0; off < 2 * step; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(gp + prefetch_ahead + off), _MM_HINT_T0);
    }
    const __m512 w0 = F::load(gp), w1 = F::load(gp + step);
#pragma GCC unroll 16
    for (int j = 0; j < RX; ++j) {
      a0[j] = _mm512_fmadd_ps(_mm512_set1_ps(xr[j][i]), w0, a0[j]);
      a1[j] = _mm512_fmadd_ps(_mm512_set1_ps(xr[j][i + 1]), w1, a1[j]);
    }
  }
  if (i < k) {
    const __m512 w0 = F::load(gp);
#pragma GCC unroll 16
    for (int j = 0; j < RX; ++j) a0[j] = _mm512_fmadd_ps(_mm512_set1_ps(xr[j][i]), w0, a0[j]);
  }
#pragma GCC unroll 16
  for (int j = 0; j < RX; ++j) _mm512_storeu_ps(y + j * ldy, _mm512_add_ps(a0[j], a1[j]));
}

template <class F>
void packed_gemm_float(int64_t k, const void* w, int64_t n_rows, const void* x, size_t x_stride, int64_t n_x,
                       float* y, int64_t ldy) {
  const size_t rb = static_cast<size_t>(k) * sizeof(typename F::elem);
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  const int64_t n_packed = n_rows / group * group;
  const bool prefetch_small = prefetch_small_tiles();
  for (int64_t g = 0; g < n_packed; g += group) {
    const uint8_t* gp = wp + g * rb;
    for_row_tiles(n_x, [&]<int RX>(int64_t j) {
      if (RX >= 4 || prefetch_small)
        float_tile<F, RX, true>(k, gp, xp + j * x_stride, x_stride, y + j * ldy + g, ldy);
      else
        float_tile<F, RX, false>(k, gp, xp + j * x_stride, x_stride, y + j * ldy + g, ldy);
    });
  }
  if (n_packed < n_rows)
    F::unpacked_gemm(k, wp + n_packed * rb, rb, n_rows - n_packed, x, x_stride, n_x, y + n_packed, ldy);
}

}  // namespace

packed_layout packed_layout_for(ggml_type type) {
  switch (type) {
    case ggml_type::q4_0: return {packed::pack_q4_0, packed_gemm<q4_0_packed>};
    case ggml_type::q4_1: return {packed::pack_q4_1, packed_gemm<q4_1_packed>};
    case ggml_type::q8_0: return {packed::pack_q8_0, packed_gemm<q8_0_packed>};
    case ggml_type::f32: return {packed::pack_f32, packed_gemm_float<f32_packed>};
    case ggml_type::f16: return {packed::pack_f16, packed_gemm_float<f16_packed>};
    case ggml_type::bf16: return {packed::pack_bf16, packed_gemm_float<bf16_packed>};
    default: return {};
  }
  return {};
}

}  // namespace fw::cpu::avx512
