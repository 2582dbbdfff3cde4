// Packed weights for AVX2 (the layout of kernels/cpu/packed_rows.hpp, the same bytes the AVX-512
// path reads): a 256-bit vector holds one 4-byte piece of 8 rows of a group (rows 0-7 at byte
// 64 t, rows 8-15 at 64 t + 32), so int32 lane r belongs to row r and a block's integer dot
// product is finished in its lane: no shuffles, no horizontal sums.
//
// Without VNNI the integer product is vpmaddubsw (unsigned weight bytes x signed activation bytes,
// pairs summed to int16) and vpmaddwd against ones (pairs of int16 summed to int32):
//  - q4_0 / q4_1: the nibbles (0..15) times activations (|x| <= 127) give pairs of at most 3810,
//    so the 8 products of a block (4 pieces x low / high nibbles) are summed in int16 (at most
//    30480) and widened once per block: 8 vpmaddubsw + 8 vpaddw (onto a zeroed sum) + 1 vpmaddwd
//    per row and block.
//  - q8_0: weights are signed; |w| against sign(x, w) (llama.cpp's trick) is one vpmaddubsw per
//    piece, widened at once (a pair may reach 32512, so int16 sums would saturate).
// q4_0's stored +8 is removed from the integer sum at the end of the block: -(sum(x) << 3).
//
// With VNNI at 256 bits (vnni256.hpp: AVX-VNNI, or its EVEX twin on AVX-512 hosts) vpdpbusd does
// a piece's multiply, the sums of fours and the int32 accumulation in one instruction: 8 per row
// and q4 block instead of 8 vpmaddubsw + 8 vpaddw + 1 vpmaddwd, 8 per q8_0 block instead of
// 8 + 8 + 8. The sums are the same integers (nothing saturates on either path), so the results are
// bit for bit the AVX2 ones.
//
// Float weights (f32 / f16 / bf16) are outer products over the per-element layout: 16 rows x up
// to 4 activation rows per tile.
//
// Register tiles: 8 rows (half a group) x up to 4 activation rows: 4 float accumulators, 4
// integer sums, the two unpacked weight vectors and the broadcasts fit the 16 ymm registers.
// Each loaded weight serves 4 activation rows and each broadcast activation piece 8 weight rows.
// One or two activation rows (decode, a 2-row verification) take all 16 rows in one pass, so
// each 64-byte line of the streamed weights is used whole when it arrives: two passes over half
// lines cost a 2-row product 1.2-1.6x a 1-row one from memory (AMD EPYC, the AVX2 path), one pass
// 1.0-1.3x. 3-4 rows make a pass per half (8 integer sums and 8 accumulators would not fit).
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/packed_rows.hpp"
#include "kernels/cpu/tile_drivers.hpp"
#include "kernels/cpu/vec_dot.hpp"
#include "kernels/cpu/vnni256.hpp"

namespace fw::cpu::avx2 {
namespace {

constexpr int group = static_cast<int>(packed_group_rows);
constexpr int max_tile_rows = 4;

struct q4_0_packed : packed::q4_0_layout {
  static constexpr size_t m_offset = 0;
  static constexpr bool has_min = false, nibbles = true, minus_8 = true;
  static constexpr auto unpacked_gemm = gemm_q4_0;
};
struct q4_1_packed : packed::q4_1_layout {
  static constexpr bool has_min = true, nibbles = true, minus_8 = false;
  static constexpr auto unpacked_gemm = gemm_q4_1;
};
struct q8_0_packed : packed::q8_0_layout {
  static constexpr size_t m_offset = 0;
  static constexpr bool has_min = false, nibbles = false, minus_8 = false;
  static constexpr auto unpacked_gemm = gemm_q8_0;
};

// Software prefetch (as on AVX-512, see vec_dot_packed_avx512.cpp): tiles of 3-4 rows always
// (they spend long enough per block that the hardware prefetcher falls behind; their second pass
// fetches the next group), 1-2 row tiles where cpu::prefetch_small_tiles() says so.
constexpr size_t prefetch_ahead = 3072;

// The unpacked tail of a float matrix (rows after the last whole group): element by element.
template <float (*Dot)(int64_t, const void*, const void*)>
void gemm_by_dot(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
                 int64_t ldy) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  for (int64_t j = 0; j < nx; ++j)
    for (int64_t i = 0; i < nw; ++i) y[j * ldy + i] = Dot(k, wp + i * ws, xp + j * xs);
}

// Broadcast of the 4 activation bytes qs[4 p .. 4 p + 3].
inline __m256i piece(const block_q8x& xb, int p) {
  int32_t v;
  std::memcpy(&v, xb.qs + 4 * p, 4);
  return _mm256_set1_epi32(v);
}

// y[j * ldy + r] for rows 8 H .. 8 (H + NH) - 1 of one group (NH halves of 8 rows in one pass)
// and RX activation rows. xs (q4_1 only): d_x * sum(x) per activation row and block, nb floats
// per row.
// Prefetch compiles the fetch in (decode's 1-2 row tiles on AMD go without it); `ahead` says how
// far past each block, per pass (0: none this pass; see packed_gemm).
template <class F, class D, int RX, int H, int NH, bool Prefetch>
void rows_tile(int64_t nb, const uint8_t* gp, const block_q8x* const* xr, float* y, int64_t ldy, const float* xs,
               size_t ahead) {
  __m256 acc[NH][RX];
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
    for (int j = 0; j < RX; ++j) acc[h][j] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b, gp += F::group_block) {
    if constexpr (Prefetch) {
      if (ahead != 0) {
#pragma GCC unroll 16
        for (size_t off = 0; off < F::group_block; off += 64)
          _mm_prefetch(reinterpret_cast<const char*>(gp + ahead + off), _MM_HINT_T0);
      }
    }
    __m256i s[NH][RX];
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
      for (int j = 0; j < RX; ++j) s[h][j] = _mm256_setzero_si256();
    if constexpr (F::nibbles) {
      const auto pieces = [&](int t) {
#pragma GCC unroll 2
        for (int h = 0; h < NH; ++h) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gp + 64 * t + 32 * (H + h)));
          const __m256i wl = _mm256_and_si256(v, m4);
          const __m256i wh = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
#pragma GCC unroll 4
          for (int j = 0; j < RX; ++j) {
            const block_q8x& xb = xr[j][b];
            if constexpr (D::enabled) {
              s[h][j] = D::dpbusd(D::dpbusd(s[h][j], wl, piece(xb, t)), wh, piece(xb, 4 + t));
            } else {
              const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(wl, piece(xb, t)),
                                                 _mm256_maddubs_epi16(wh, piece(xb, 4 + t)));
              s[h][j] = _mm256_add_epi16(s[h][j], p);
            }
          }
        }
      };
      // The loop over the pieces stays rolled: unrolled, GCC 12 hoisted the next pieces' loads and
      // spilled the tile's sums to the stack (4 rows x 8 weight rows: 77 -> 100 GMAC/s on one
      // core once rolled; one row in cache 14% faster, q8_0 even).
#pragma GCC unroll 1
      for (int t = 0; t < 4; ++t) pieces(t);
      if constexpr (!D::enabled) {
#pragma GCC unroll 2
        for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
          for (int j = 0; j < RX; ++j) s[h][j] = _mm256_madd_epi16(s[h][j], ones);
      }
    } else {
      const auto pieces = [&](int t) {
#pragma GCC unroll 2
        for (int h = 0; h < NH; ++h) {
          const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gp + 64 * t + 32 * (H + h)));
          const __m256i aw = _mm256_sign_epi8(w, w);
#pragma GCC unroll 4
          for (int j = 0; j < RX; ++j) {
            const __m256i sx = _mm256_sign_epi8(piece(xr[j][b], t), w);
            if constexpr (D::enabled) {
              s[h][j] = D::dpbusd(s[h][j], aw, sx);
            } else {
              s[h][j] = _mm256_add_epi32(s[h][j], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sx), ones));
            }
          }
        }
      };
#pragma GCC unroll 1
      for (int t = 0; t < 8; ++t) pieces(t);
    }
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) {
      const __m256 dw =
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gp + F::d_offset + 16 * (H + h))));
      __m256 mw = _mm256_setzero_ps();
      if constexpr (F::has_min)
        mw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gp + F::m_offset + 16 * (H + h))));
#pragma GCC unroll 4
      for (int j = 0; j < RX; ++j) {
        const block_q8x& xb = xr[j][b];
        __m256i a = s[h][j];
        if constexpr (F::minus_8) a = _mm256_sub_epi32(a, _mm256_set1_epi32(xb.sum * 8));
        acc[h][j] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(xb.d)), _mm256_cvtepi32_ps(a), acc[h][j]);
        if constexpr (F::has_min) acc[h][j] = _mm256_fmadd_ps(mw, _mm256_set1_ps(xs[j * nb + b]), acc[h][j]);
      }
    }
  }
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
    for (int j = 0; j < RX; ++j) _mm256_storeu_ps(y + j * ldy + 8 * (H + h), acc[h][j]);
}

template <class F, class D>
void packed_gemm(int64_t k, const void* w, int64_t n_rows, const void* x, size_t x_stride, int64_t n_x, float* y,
                 int64_t ldy) {
  const int64_t nb = k / 32;
  const size_t rb = static_cast<size_t>(nb) * (F::group_block / group);
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  const int64_t n_packed = n_rows / group * group;
  const float* xs = F::has_min ? packed::q8x_min_terms(x, x_stride, n_x, nb) : nullptr;
  const bool prefetch_small = prefetch_small_tiles();
  const size_t group_bytes = static_cast<size_t>(nb) * F::group_block;  // the same block of the next group
  for (int64_t g = 0; g < n_packed; g += group) {
    const uint8_t* gp = wp + g * rb;
    tiles::for_row_tiles<max_tile_rows>(n_x, [&]<int RX>(int64_t j) {
      const block_q8x* xr[RX];
#pragma GCC unroll 4
      for (int r = 0; r < RX; ++r) xr[r] = reinterpret_cast<const block_q8x*>(xp + (j + r) * x_stride);
      const float* xsj = xs ? xs + j * nb : nullptr;
      float* yj = y + j * ldy + g;
      if constexpr (RX <= 2) {  // decode, 2-row verification: both halves in one pass over the group's lines
        if (prefetch_small) rows_tile<F, D, RX, 0, 2, true>(nb, gp, xr, yj, ldy, xsj, prefetch_ahead);
        else rows_tile<F, D, RX, 0, 2, false>(nb, gp, xr, yj, ldy, xsj, 0);
      } else {
        // A pass per half. The first tile's first pass streams the group from memory (fetching
        // ahead within it); its second pass finds the group in L1 and fetches the next group, so
        // the weight stream keeps flowing while the tiles compute from cache.
        rows_tile<F, D, RX, 0, 1, true>(nb, gp, xr, yj, ldy, xsj, j == 0 ? prefetch_ahead : 0);
        rows_tile<F, D, RX, 1, 1, true>(nb, gp, xr, yj, ldy, xsj, j == 0 ? group_bytes : 0);
      }
    });
  }
  if (n_packed < n_rows)
    F::unpacked_gemm(k, wp + n_packed * rb, rb, n_rows - n_packed, x, x_stride, n_x, y + n_packed, ldy);
}

// -- float weights (f32, f16, bf16): element i of the 16 rows side by side (packed_rows.hpp) --
// The product is an outer product: acc[j] += x_j[i] * w_i for rows 0-7 and 8-15, each broadcast
// activation serving 16 rows and each weight vector RX activation rows; 2 RX independent chains.
struct f32_packed {
  using elem = float;
  static __m256 load(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static constexpr auto unpacked_gemm = gemm_by_dot<dot_f32>;
};
struct f16_packed {
  using elem = uint16_t;
  static __m256 load(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static constexpr auto unpacked_gemm = gemm_by_dot<dot_f16>;
};
struct bf16_packed {
  using elem = uint16_t;
  static __m256 load(const uint8_t* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static constexpr auto unpacked_gemm = gemm_by_dot<dot_bf16>;
};

template <class F, int RX, bool Prefetch>
void float_tile(int64_t k, const uint8_t* gp, const uint8_t* x, size_t x_stride, float* y, int64_t ldy) {
  constexpr size_t step = group * sizeof(typename F::elem), half = step / 2;
  __m256 a0[RX], a1[RX];
  const float* xr[RX];
#pragma GCC unroll 4
  for (int j = 0; j < RX; ++j) {
    a0[j] = _mm256_setzero_ps(), a1[j] = _mm256_setzero_ps();
    xr[j] = reinterpret_cast<const float*>(x + j * x_stride);
  }
  for (int64_t i = 0; i < k; ++i, gp += step) {
    // One prefetch per step (f16 / bf16: the same line every other step, a cheap repeat).
    if constexpr (Prefetch) _mm_prefetch(reinterpret_cast<const char*>(gp + prefetch_ahead), _MM_HINT_T0);
    const __m256 w0 = F::load(gp), w1 = F::load(gp + half);
#pragma GCC unroll 4
    for (int j = 0; j < RX; ++j) {
      const __m256 xv = _mm256_set1_ps(xr[j][i]);
      a0[j] = _mm256_fmadd_ps(xv, w0, a0[j]);
      a1[j] = _mm256_fmadd_ps(xv, w1, a1[j]);
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < RX; ++j) {
    _mm256_storeu_ps(y + j * ldy, a0[j]);
    _mm256_storeu_ps(y + j * ldy + 8, a1[j]);
  }
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
    tiles::for_row_tiles<max_tile_rows>(n_x, [&]<int RX>(int64_t j) {
      if (RX >= max_tile_rows || prefetch_small)
        float_tile<F, RX, true>(k, gp, xp + j * x_stride, x_stride, y + j * ldy + g, ldy);
      else
        float_tile<F, RX, false>(k, gp, xp + j * x_stride, x_stride, y + j * ldy + g, ldy);
    });
  }
  if (n_packed < n_rows)
    F::unpacked_gemm(k, wp + n_packed * rb, rb, n_rows - n_packed, x, x_stride, n_x, y + n_packed, ldy);
}

// The block formats' layouts with the integer products of D (no_vnni or vnni256).
template <class D>
packed_layout quantized_layout(ggml_type type) {
  switch (type) {
    case ggml_type::q4_0: return {packed::pack_q4_0, packed_gemm<q4_0_packed, D>};
    case ggml_type::q4_1: return {packed::pack_q4_1, packed_gemm<q4_1_packed, D>};
    case ggml_type::q8_0: return {packed::pack_q8_0, packed_gemm<q8_0_packed, D>};
    default: return {};
  }
}

}  // namespace

packed_layout packed_layout_for(ggml_type type) {
  switch (type) {
    case ggml_type::f32: return {packed::pack_f32, packed_gemm_float<f32_packed>};
    case ggml_type::f16: return {packed::pack_f16, packed_gemm_float<f16_packed>};
    case ggml_type::bf16: return {packed::pack_bf16, packed_gemm_float<bf16_packed>};
    default: return quantized_layout<no_vnni>(type);
  }
}

packed_layout vnni_packed_layout_for(ggml_type type, vnni_encoding encoding) {
  return encoding == vnni_encoding::evex ? quantized_layout<vnni256<true>>(type)
                                         : quantized_layout<vnni256<false>>(type);
}

}  // namespace fw::cpu::avx2
