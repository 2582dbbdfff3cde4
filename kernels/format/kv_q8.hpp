// kv_q8: the q8 element type of the KV cache (kv_dtype::q8): a tile's block_tokens x head_dim int8
// elements, then block_tokens float scales (token t's at index t). A token's head_dim values x
// are stored as round(x / s) with s = max |x| / 127 (s = 0 for an all-zero row, which stores
// zeros): error at most s / 2 per element. One quantizer for every writer (the pool, the KV
// codec), so a token written twice gets the same bytes.
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace fw {

/// The scales of a q8 tile of bt tokens x hd elements (after its elements).
inline float* q8_tile_scales(void* tile, uint32_t bt, uint32_t hd) {
  return reinterpret_cast<float*>(static_cast<int8_t*>(tile) + size_t{bt} * hd);
}
inline const float* q8_tile_scales(const void* tile, uint32_t bt, uint32_t hd) {
  return reinterpret_cast<const float*>(static_cast<const int8_t*>(tile) + size_t{bt} * hd);
}

/// Quantizes n floats into q; returns the scale (x[i] ~ scale * q[i]). Non-finite input: the
/// scale is NaN, and attention over it gives NaN, as it would over the float values.
inline float quantize_kv_row(const float* x, uint32_t n, int8_t* q) {
  float amax = 0.f;
  bool finite = true;
  for (uint32_t i = 0; i < n; ++i) {
    finite = finite && std::isfinite(x[i]);
    amax = std::max(amax, std::fabs(x[i]));
  }
  if (!finite) {
    std::fill(q, q + n, int8_t{0});
    return NAN;
  }
  const float scale = amax / 127.f;
  if (!(scale > 0.f)) {  // all zeros, or so small that the scale underflows
    std::fill(q, q + n, int8_t{0});
    return 0.f;
  }
  // x / scale, not x * (1 / scale): a subnormal scale's reciprocal is infinite, and 0 * inf is NaN
  // (found by tests/fuzz/fuzz_kv_stream).
  for (uint32_t i = 0; i < n; ++i) q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] / scale), -127.f, 127.f));
  return scale;
}

}  // namespace fw
