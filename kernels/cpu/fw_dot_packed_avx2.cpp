// Packed fw_w8a8 / fw_w4a16 weights for AVX2: the bytes the AVX-512 path reads (fw_packed_rows.hpp),
// one 256-bit vector per 8-row half of a 16-row group, so int32 lane r belongs to row r. Each lane
// performs exactly the reference's steps for its row (integer sums exact, then the same fma / mul
// / add sequence per group), so results equal kernels/ref/fw_dot_ref bit for bit.
//  w8a8: the stored w + 128 is flipped back to int8 (one xor per weight vector, shared by the
//    tile's activation rows); each 4-channel piece is |w| * sign(x, w) with vpmaddubsw (a pair of
//    products reaches 32512 at w = -128: widened at once by vpmaddwd, never summed in int16).
//  w4a16: (v >> 4 t) & 0x000f000f is the int16 pair (e_2t, e_2t+1); vpmaddwd against the
//    broadcast int16 activation pair gives both products summed in int32.
// With 256-bit VNNI (vnni256.hpp) the piece's vpmaddubsw + vpmaddwd + vpaddd is one vpdpbusd
// (w8a8) and w4a16's vpmaddwd + vpaddd one vpdpwssd: the same integer sums, so the same results.
// Register tiles: 8 rows x up to 4 activation rows (4 integer sums, 4 float accumulators and the
// unpacked weights fit the 16 ymm registers), or all 16 rows for one activation row (decode: each
// streamed 64-byte line used whole). The loops over the tile (halves, activation rows, a vector's
// 4 pieces) are unrolled at compile time so the sums stay in registers; the loop over a group's
// pieces / vectors is not (unrolled, GCC 12 hoisted their loads and spilled the sums: W4A16 pp512
// +36%, tg +25% once rolled, AVX2 path on the 2-core EPYC).
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "kernels/cpu/fw_dot.hpp"
#include "kernels/cpu/fw_packed_rows.hpp"
#include "kernels/cpu/tile_drivers.hpp"
#include "kernels/cpu/vec_dot.hpp"
#include "kernels/cpu/vnni256.hpp"
#include "kernels/format/fw_formats.hpp"

namespace fw::cpu::avx2 {
namespace {

constexpr int group = static_cast<int>(packed_group_rows);
constexpr int max_tile_rows = 4;
constexpr size_t prefetch_ahead = 3072;

inline __m256i bcast32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// -- W8A8 --

/// Rows 8 H .. 8 (H + NH) - 1 of one group (NH halves in one pass) against RX activation rows;
/// G8: the activation group.
template <class D, int G8, int RX, int H, int NH>
void rows_w8(int64_t k, const uint8_t* gp, const uint8_t* const* xr, float* y, int64_t ldy) {
  constexpr int pieces = G8 / 4;
  const int64_t ng = k / G8;
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[NH][RX];
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
    for (int j = 0; j < RX; ++j) acc[h][j] = _mm256_setzero_ps();
  const uint8_t* wq = gp;
  for (int64_t b = 0; b < ng; ++b, wq += 16 * G8) {
    if constexpr (H == 0) {
#pragma GCC unroll 16
      for (int off = 0; off < 16 * G8; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(wq + prefetch_ahead + off), _MM_HINT_T0);
    }
    __m256i s[NH][RX];
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
      for (int j = 0; j < RX; ++j) s[h][j] = _mm256_setzero_si256();
    const auto piece = [&](int p) {
#pragma GCC unroll 2
      for (int h = 0; h < NH; ++h) {
        const __m256i w =
            _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wq + 64 * p + 32 * (H + h))), flip);
        const __m256i aw = _mm256_sign_epi8(w, w);
#pragma GCC unroll 4
        for (int j = 0; j < RX; ++j) {
          const __m256i xv = _mm256_sign_epi8(bcast32(xr[j] + act_row_header + b * G8 + 4 * p), w);
          if constexpr (D::enabled) s[h][j] = D::dpbusd(s[h][j], aw, xv);
          else s[h][j] = _mm256_add_epi32(s[h][j], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, xv), ones));
        }
      }
    };
#pragma GCC unroll 1
    for (int p = 0; p < pieces; ++p) piece(p);
#pragma GCC unroll 4
    for (int j = 0; j < RX; ++j) {
      const __m256 dg = _mm256_set1_ps(reinterpret_cast<const float*>(xr[j] + act_row_header + k)[b]);
#pragma GCC unroll 2
      for (int h = 0; h < NH; ++h) acc[h][j] = _mm256_fmadd_ps(dg, _mm256_cvtepi32_ps(s[h][j]), acc[h][j]);
    }
  }
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h) {
    const __m256 dw = _mm256_loadu_ps(reinterpret_cast<const float*>(gp + 16 * k + 32 * (H + h)));
#pragma GCC unroll 4
    for (int j = 0; j < RX; ++j) _mm256_storeu_ps(y + j * ldy + 8 * (H + h), _mm256_mul_ps(acc[h][j], dw));
  }
}

template <class D, int G8>
void packed_gemm_w8_g(int64_t k, const uint8_t* wp, int64_t n_packed, const uint8_t* xp, size_t xs, int64_t nx,
                      float* y, int64_t ldy) {
  const size_t rb = sizeof(w8_row_header) + static_cast<size_t>(k);
  for (int64_t g = 0; g < n_packed; g += group)
    tiles::for_row_tiles<max_tile_rows>(nx, [&]<int RX>(int64_t j) {
      const uint8_t* xr[RX];
#pragma GCC unroll 4
      for (int r = 0; r < RX; ++r) xr[r] = xp + (j + r) * xs;
      if constexpr (RX <= 2) {  // decode, 2-row verification: both halves in one pass over the group's lines
        // Without VNNI here: a row's vpdpbusd are one dependency chain per half, and decode measured
        // 6% slower with them (AMD EPYC, the EVEX form); vpmaddwd's chain is the add alone.
        rows_w8<no_vnni, G8, RX, 0, 2>(k, wp + g * rb, xr, y + j * ldy + g, ldy);
      } else {
        rows_w8<D, G8, RX, 0, 1>(k, wp + g * rb, xr, y + j * ldy + g, ldy);
        rows_w8<D, G8, RX, 1, 1>(k, wp + g * rb, xr, y + j * ldy + g, ldy);
      }
    });
}

// -- W4A16 --

/// Rows 8 H .. 8 (H + NH) - 1 of one group (NH halves in one pass) against RX activation rows.
/// xsum: (float) sum(x) per activation row and group of G channels.
template <class D, int G, int RX, int H, int NH>
void rows_w4(int64_t k, const uint8_t* gp, const uint8_t* const* xr, const float* xsum, float* y, int64_t ldy) {
  constexpr int vecs = G / 8;
  const int64_t ng = k / G;
  const __m256i mask = _mm256_set1_epi32(0x000f000f);
  __m256 acc[NH][RX];
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
    for (int j = 0; j < RX; ++j) acc[h][j] = _mm256_setzero_ps();
  for (int64_t g = 0; g < ng; ++g, gp += packed::w4_block<G>) {
    if constexpr (H == 0) {
#pragma GCC unroll 16
      for (size_t off = 0; off < packed::w4_block<G>; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(gp + prefetch_ahead + off), _MM_HINT_T0);
    }
    __m256i s[NH][RX];
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
      for (int j = 0; j < RX; ++j) s[h][j] = _mm256_setzero_si256();
    const auto vec = [&](int v) {
#pragma GCC unroll 2
      for (int h = 0; h < NH; ++h) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gp + 64 + 64 * v + 32 * (H + h)));
#pragma GCC unroll 4
        for (int t = 0; t < 4; ++t) {
          const __m256i w = _mm256_and_si256(_mm256_srli_epi32(q, 4 * t), mask);
#pragma GCC unroll 4
          for (int j = 0; j < RX; ++j) {
            const uint8_t* xe = xr[j] + act_row_header + 2 * (g * G + 8 * v + 2 * t);
            if constexpr (D::enabled) s[h][j] = D::dpwssd(s[h][j], w, bcast32(xe));
            else s[h][j] = _mm256_add_epi32(s[h][j], _mm256_madd_epi16(w, bcast32(xe)));
          }
        }
      }
    };
    // One vector of 8 channels at a time (rolled: see the header).
#pragma GCC unroll 1
    for (int v = 0; v < vecs; ++v) vec(v);
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) {
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gp + 16 * (H + h))));
      const __m256 m = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gp + 32 + 16 * (H + h))));
#pragma GCC unroll 4
      for (int j = 0; j < RX; ++j) {
        const __m256 mx = _mm256_mul_ps(m, _mm256_set1_ps(xsum[j * ng + g]));
        acc[h][j] = _mm256_add_ps(acc[h][j], _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(s[h][j]), mx));
      }
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < RX; ++j) {
    float dx;
    std::memcpy(&dx, xr[j], 4);
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h)
      _mm256_storeu_ps(y + j * ldy + 8 * (H + h), _mm256_mul_ps(acc[h][j], _mm256_set1_ps(dx)));
  }
}

template <class D>
void packed_w8a8(int64_t k, const void* w, int64_t n_rows, const void* x, size_t xs, int64_t nx, float* y,
                 int64_t ldy) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  const size_t rb = sizeof(w8_row_header) + static_cast<size_t>(k);
  const int64_t n_packed = n_rows / group * group;
  if (act_i8_group(k) == 64)
    packed_gemm_w8_g<D, 64>(k, wp, n_packed, xp, xs, nx, y, ldy);
  else
    packed_gemm_w8_g<D, 32>(k, wp, n_packed, xp, xs, nx, y, ldy);
  if (n_packed < n_rows) gemm_w8a8(k, wp + n_packed * rb, rb, n_rows - n_packed, x, xs, nx, y + n_packed, ldy);
}

template <class D, int G>
void packed_w4a16(int64_t k, const void* w, int64_t n_rows, const void* x, size_t xs, int64_t nx, float* y,
                  int64_t ldy) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  const int64_t ng = k / G;
  const size_t rb = static_cast<size_t>(ng) * w4_group_bytes(G);
  const int64_t n_packed = n_rows / group * group;
  const float* xsum = packed::w4_group_xsums(x, xs, nx, k, G);  // once per call
  for (int64_t g0 = 0; g0 < n_packed; g0 += group)
    tiles::for_row_tiles<max_tile_rows>(nx, [&]<int RX>(int64_t j) {
      const uint8_t* xr[RX];
#pragma GCC unroll 4
      for (int r = 0; r < RX; ++r) xr[r] = xp + (j + r) * xs;
      if constexpr (RX == 1) {  // decode: both halves in one pass (2 rows in one pass measured even)
        // Without VNNI (as W8A8's decode above): tg 8% slower with vpdpwssd's chains.
        rows_w4<no_vnni, G, 1, 0, 2>(k, wp + g0 * rb, xr, xsum + j * ng, y + j * ldy + g0, ldy);
      } else {
        rows_w4<D, G, RX, 0, 1>(k, wp + g0 * rb, xr, xsum + j * ng, y + j * ldy + g0, ldy);
        rows_w4<D, G, RX, 1, 1>(k, wp + g0 * rb, xr, xsum + j * ng, y + j * ldy + g0, ldy);
      }
    });
  if (n_packed < n_rows) gemm_w4a16<G>(k, wp + n_packed * rb, rb, n_rows - n_packed, x, xs, nx, y + n_packed, ldy);
}

template <class D>
packed_layout vnni_layout(ggml_type type) {
  switch (type) {
    case ggml_type::fw_w8a8: return {packed::pack_w8a8, packed_w8a8<D>};
    case ggml_type::fw_w4a16_g32: return {packed::pack_w4a16<32>, packed_w4a16<D, 32>};
    case ggml_type::fw_w4a16_g64: return {packed::pack_w4a16<64>, packed_w4a16<D, 64>};
    case ggml_type::fw_w4a16_g128: return {packed::pack_w4a16<128>, packed_w4a16<D, 128>};
    default: return {};
  }
}

}  // namespace

void packed_gemm_w8a8(int64_t k, const void* w, int64_t n_rows, const void* x, size_t xs, int64_t nx, float* y,
                      int64_t ldy) {
  packed_w8a8<no_vnni>(k, w, n_rows, x, xs, nx, y, ldy);
}

template <int G>
void packed_gemm_w4a16(int64_t k, const void* w, int64_t n_rows, const void* x, size_t xs, int64_t nx, float* y,
                       int64_t ldy) {
  packed_w4a16<no_vnni, G>(k, w, n_rows, x, xs, nx, y, ldy);
}

packed_layout fw_vnni_packed_layout_for(ggml_type type, vnni_encoding encoding) {
  return encoding == vnni_encoding::evex ? vnni_layout<vnni256<true>>(type) : vnni_layout<vnni256<false>>(type);
}

template void packed_gemm_w4a16<32>(int64_t, const void*, int64_t, const void*, size_t, int64_t, float*, int64_t);
template void packed_gemm_w4a16<64>(int64_t, const void*, int64_t, const void*, size_t, int64_t, float*, int64_t);
template void packed_gemm_w4a16<128>(int64_t, const void*, int64_t, const void*, size_t, int64_t, float*, int64_t);

}  // namespace fw::cpu::avx2
