// The packed fw_w8a8 product on AMX int8 tiles (Xeon, Sapphire Rapids and later), bit for bit the
// results of the AVX-512 VNNI packed product (fw_dot_packed_avx512.cpp), itself bit for bit the
// scalar reference: a row's logits never depend on how many rows share its step or on which path
// the host takes.
//
// Why it is exact: per activation group b (64 channels, or 32 where k is not a multiple of 64) the
// VNNI product computes the exact int32 s = sum(w x) (the packed bytes are w + 128, the sum starts
// at -128 sum(x)) and then acc = fma(d_x[b], float(s), acc) per lane; the row scale multiplies at
// the end. One TDPBSUD computes sum((w + 128) x) for up to 16 activation rows x 16 weight rows over
// one group at once: A is the rows' int8 codes in place (the activation rows' own layout, one row
// per tile row), B the packed group as it is (16 pieces of 4 channels x 16 rows x 4 bytes is the
// tile unit's B layout). The int32 tile is stored, -128 sum(x) added, and the same float operations
// run in the same order on every lane.
//
// Why W8A8 only: its weights have one scale per row, so a tile product covers a whole activation
// group and a group needs one float step per output; the GGUF block formats scale every 32
// channels of every weight row, so their tiles are half used and need a float step per block with
// two scales (tried 2026-12-05: no faster than VNNI; docs/benchmarks.md).
//
// Tiles: 0-1 the int32 results, 2-3 activation codes, 4-5 weights (two of each: the tile unit
// computes group b + 1 while the vector units finish group b). Activation rows are taken 16 at a
// time, then the rest in one shorter tile (tiles of any height: verification's k + 1 rows use
// them too); fewer than amx_min_rows rows and the unpacked rows after the last group go to the
// AVX-512 path. Thread-safety: each call loads its own tile configuration and releases the tiles
// before it returns (the tile state is per thread).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 AVX-512 header false positive
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <vector>

#include "kernels/cpu/fw_dot.hpp"
#include "kernels/cpu/fw_packed_rows.hpp"
#include "kernels/cpu/vec_dot.hpp"
#include "kernels/format/fw_formats.hpp"

namespace fw::cpu::amx {
namespace {

constexpr int group = static_cast<int>(packed_group_rows);
// Weights are prefetched this far ahead of the tile loads: a decode step streams them from
// memory, and a tile load alone keeps too few lines in flight (2 threads, W8A8 SmolLM2, 16
// sequences: 867-893 t/s without, 1009-1065 at 4 KiB, 1055-1177 at 8 KiB ahead).
constexpr size_t prefetch_ahead = 8192;

struct alignas(64) tile_config {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

void configure(int m, int g8) {
  tile_config c;
  for (int t : {0, 1}) c.rows[t] = static_cast<uint8_t>(m), c.colsb[t] = 64;  // m x 16 int32
  for (int t : {2, 3}) c.rows[t] = static_cast<uint8_t>(m), c.colsb[t] = static_cast<uint16_t>(g8);
  for (int t : {4, 5}) c.rows[t] = static_cast<uint8_t>(g8 / 4), c.colsb[t] = 64;  // pieces x 16 rows x 4
  // Not _tile_loadconfig: GCC 12's declares an 8-byte memory operand, so the compiler may drop the
  // stores to the rest of the struct as dead. This operand is the whole 64-byte struct.
  __asm__ volatile("ldtilecfg %0" : : "m"(c));
}

// M activation rows (x, xs apart) by one packed group of 16 weight rows (gp).
template <int G8, int M>
void tile_rows(int64_t k, const uint8_t* gp, const uint8_t* x, size_t xs, const int32_t* xneg, float* y,
               int64_t ldy) {
  const int64_t ng = k / G8;
  const uint8_t* codes = x + act_row_header;
  const long stride = static_cast<long>(xs);
  alignas(64) int32_t c[2][M * 16];
  __m512 acc[M];
#pragma GCC unroll 16
  for (int r = 0; r < M; ++r) acc[r] = _mm512_setzero_ps();
  // The group's float step on lane i of row r, as the VNNI product does it.
  const auto finish = [&](const int32_t* cb, int64_t b) {
#pragma GCC unroll 16
    for (int r = 0; r < M; ++r) {
      const __m512i s = _mm512_add_epi32(_mm512_set1_epi32(xneg[r * ng + b]), _mm512_load_si512(cb + 16 * r));
      const float dg = reinterpret_cast<const float*>(x + r * xs + act_row_header + k)[b];
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(dg), _mm512_cvtepi32_ps(s), acc[r]);
    }
  };
  // Group b: its codes and weights into tiles 2 + b % 2 and 4 + b % 2, the product into tile b % 2,
  // stored to c[b % 2]. Tile numbers are literals in the instructions, hence the two copies.
#define FW_AMX_ISSUE(C, A, B)                       \
  _tile_loadd(A, codes + b * G8, stride);           \
  _tile_loadd(B, gp + b * (16 * G8), 64);           \
  _tile_zero(C);                                    \
  _tile_dpbsud(C, A, B);                            \
  _tile_stored(C, c[C], 64)
  const auto issue = [&](int64_t b) {
    const uint8_t* ahead = gp + b * (16 * G8) + prefetch_ahead;
    for (int off = 0; off < 16 * G8; off += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead + off), _MM_HINT_T0);
    if (b & 1) {
      FW_AMX_ISSUE(1, 3, 5);
    } else {
      FW_AMX_ISSUE(0, 2, 4);
    }
  };
  // One group ahead: deeper (three ahead, four result tiles; or three sets of operand tiles) was
  // no faster on this VM (best of many runs ~410-445 GMAC/s each, all within its noise).
  issue(0);
  for (int64_t b = 0; b < ng; ++b) {
    if (b + 1 < ng) issue(b + 1);
    finish(c[b & 1], b);
  }
#undef FW_AMX_ISSUE
  const __m512 dw = _mm512_loadu_ps(gp + 16 * k);
#pragma GCC unroll 16
  for (int r = 0; r < M; ++r) _mm512_storeu_ps(y + r * ldy, _mm512_mul_ps(acc[r], dw));
}

template <int G8, int M>
void all_groups(int64_t k, const uint8_t* wp, int64_t n_packed, const uint8_t* x, size_t xs, const int32_t* xneg,
                float* y, int64_t ldy) {
  const size_t rb = sizeof(w8_row_header) + static_cast<size_t>(k);
  for (int64_t g = 0; g < n_packed; g += group) tile_rows<G8, M>(k, wp + g * rb, x, xs, xneg, y + g, ldy);
}

// The rows of one shorter tile (amx_min_rows <= m < 16): one instantiation per height.
template <int G8, int M = static_cast<int>(amx_min_rows)>
void short_tile(int m, int64_t k, const uint8_t* wp, int64_t n_packed, const uint8_t* x, size_t xs,
                const int32_t* xneg, float* y, int64_t ldy) {
  if constexpr (M < group) {
    if (m == M) return all_groups<G8, M>(k, wp, n_packed, x, xs, xneg, y, ldy);
    short_tile<G8, M + 1>(m, k, wp, n_packed, x, xs, xneg, y, ldy);
  }
}

template <int G8>
void packed_gemm_g(int64_t k, const uint8_t* wp, int64_t n_packed, const uint8_t* xp, size_t xs, int64_t nx,
                   float* y, int64_t ldy) {
  const int64_t ng = k / G8;
  // -128 sum(x) per activation row and group: the VNNI product's own integers.
  thread_local std::vector<int32_t> xneg;
  xneg.resize(static_cast<size_t>(nx * ng));
  avx512::w8_group_xneg(k, xp, xs, nx, xneg.data());
  const int64_t full = nx / group * group, rest = nx - full;
  if (full > 0) {
    configure(group, G8);
    for (int64_t j = 0; j < full; j += group)
      all_groups<G8, group>(k, wp, n_packed, xp + j * xs, xs, xneg.data() + j * ng, y + j * ldy, ldy);
  }
  if (rest >= amx_min_rows) {
    configure(static_cast<int>(rest), G8);
    short_tile<G8>(static_cast<int>(rest), k, wp, n_packed, xp + full * xs, xs, xneg.data() + full * ng,
                   y + full * ldy, ldy);
  }
  _tile_release();
  if (rest > 0 && rest < amx_min_rows)  // too few rows for a tile: the VNNI product, same results
    avx512::packed_gemm_w8a8(k, wp, n_packed, xp + full * xs, xs, rest, y + full * ldy, ldy);
}

void packed_gemm_w8a8(int64_t k, const void* w, int64_t n_rows, const void* x, size_t xs, int64_t nx, float* y,
                      int64_t ldy) {
  const int64_t n_packed = n_rows / group * group;
  if (nx < amx_min_rows || n_packed == 0) {
    avx512::packed_gemm_w8a8(k, w, n_rows, x, xs, nx, y, ldy);
    return;
  }
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  if (act_i8_group(k) == 64)
    packed_gemm_g<64>(k, wp, n_packed, xp, xs, nx, y, ldy);
  else
    packed_gemm_g<32>(k, wp, n_packed, xp, xs, nx, y, ldy);
  const size_t rb = sizeof(w8_row_header) + static_cast<size_t>(k);
  if (n_packed < n_rows) avx512::gemm_w8a8(k, wp + n_packed * rb, rb, n_rows - n_packed, x, xs, nx, y + n_packed, ldy);
}

}  // namespace

packed_layout packed_layout_for(ggml_type type) {
  if (type == ggml_type::fw_w8a8) return {packed::pack_w8a8, packed_gemm_w8a8};
  return {};
}

}  // namespace fw::cpu::amx
