// tile_drivers: the loops that walk a product of weight rows and activation rows in register
// tiles, shared by the SIMD paths (the tiles themselves are per path). ISA-neutral: only the
// prefetch hint (SSE, part of x86-64) is used, so any *_avx2 / *_avx512 file may include it.
// Thread-safety: pure functions.
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace fw::cpu::tiles {

/// A tile kernel: out[j * ldo + i] = dot(w[i], x[j]) for the tile's NW weight rows and NX
/// activation rows (both fixed by the instantiation).
using tile_fn = void (*)(int64_t k, const uint8_t* const* w, const uint8_t* const* x, float* out, int64_t ldo);

/// gemm over unpacked rows: 1 weight row x up to 4 activation rows per tile (T4..T1 by how many
/// activation rows are left); a short last tile repeats the last row (read, never written).
template <tile_fn T4, tile_fn T3, tile_fn T2, tile_fn T1>
void gemm_by_tiles(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
                   int64_t ldy) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  for (int64_t j0 = 0; j0 < nx; j0 += 4) {
    const int64_t nj = std::min<int64_t>(4, nx - j0);
    const uint8_t* xr[4] = {xp + j0 * xs, xp + std::min(j0 + 1, nx - 1) * xs, xp + std::min(j0 + 2, nx - 1) * xs,
                            xp + std::min(j0 + 3, nx - 1) * xs};
    for (int64_t i = 0; i < nw; ++i) {
      const uint8_t* wr[1] = {wp + i * ws};
      float* out = y + j0 * ldy + i;
      switch (nj) {
        case 4: T4(k, wr, xr, out, ldy); break;
        case 3: T3(k, wr, xr, out, ldy); break;
        case 2: T2(k, wr, xr, out, ldy); break;
        default: T1(k, wr, xr, out, ldy); break;
      }
    }
  }
}

/// gemv over unpacked rows: 4 weight rows x 1 activation row per tile, then single rows.
template <tile_fn T4, tile_fn T1>
void gemv_by_tiles(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, float* out) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const uint8_t* xr[1] = {static_cast<const uint8_t*>(x)};
  int64_t i = 0;
  for (; i + 4 <= nw; i += 4) {
    // Fetch the next tile's rows while this one computes: four rows side by side are four
    // streams, which the hardware prefetchers follow poorly (measured 8 -> 13 GB/s from DRAM).
    const uint8_t* next = wp + (i + 4) * ws;
    for (size_t off = 0; off < 4 * ws; off += 64) _mm_prefetch(reinterpret_cast<const char*>(next + off), _MM_HINT_T0);
    const uint8_t* wr[4] = {wp + i * ws, wp + (i + 1) * ws, wp + (i + 2) * ws, wp + (i + 3) * ws};
    T4(k, wr, xr, out + i, 1);
  }
  for (; i < nw; ++i) {
    const uint8_t* wr[1] = {wp + i * ws};
    T1(k, wr, xr, out + i, 1);
  }
}

namespace detail {
template <int R, class Tile>
void last_row_tile(int64_t rest, int64_t j, Tile& tile) {
  if constexpr (R >= 1) {
    if (rest == R) tile.template operator()<R>(j);
    else last_row_tile<R - 1>(rest, j, tile);
  }
}
}  // namespace detail

/// Calls tile.template operator()<RX>(j) over activation rows [0, n_x): tiles of Max, then one
/// tile of the remaining 1..Max-1 (each RX a separate, fully unrolled instantiation). Max is what
/// the path's registers hold: 8 on AVX-512 (32 zmm), 4 on AVX2 (16 ymm).
template <int Max = 8, class Tile>
void for_row_tiles(int64_t n_x, Tile&& tile) {
  int64_t j = 0;
  for (; j + Max <= n_x; j += Max) tile.template operator()<Max>(j);
  detail::last_row_tile<Max - 1>(n_x - j, j, tile);
}

}  // namespace fw::cpu::tiles
