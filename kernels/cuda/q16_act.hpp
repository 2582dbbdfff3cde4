// q16_act: the integer products of the CUDA kernels for flywheel's W4A16 weights, with the CPU's
// semantics (kernels/ref fw_dot_ref): each activation row quantized once per product to int16
// under one scale (max |x| / 32767, ref::quantize_act_i16) with a sum per 32 values, then per
// weight group one integer dot (dp2a: two int16 x int8 products a step, nibbles widened to bytes)
// and the reference's fused step fma(d, isum, m * xsum); the row's sum times its scale. The
// activations' device layout (q16_act_bytes): every row's k int16 values, then from
// q16_act_sums_offset each row's k / 32 int32 sums, then from q16_act_scales_offset one float
// per row. Everything here is FW_HD: tests/kernels/cuda_math_test.cpp checks it on the host
// against the references, bit for bit.
// Thread-safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cuda/cuda_compat.hpp"
#include "kernels/cuda/weight_chunk.hpp"

namespace fw::cuda {

/// Formats whose products take int16 activations (flywheel's W4A16).
FW_HD bool int16_act_format(wfmt f) { return f == wfmt::w4g32 || f == wfmt::w4g64 || f == wfmt::w4g128; }

/// Where the chunk sums of m rows of k activations start, then the row scales (16-byte aligned).
FW_HD int64_t q16_act_sums_offset(int64_t m, int64_t k) { return (2 * m * k + 15) / 16 * 16; }
FW_HD int64_t q16_act_scales_offset(int64_t m, int64_t k) {
  return (q16_act_sums_offset(m, k) + 4 * m * (k / 32) + 15) / 16 * 16;
}
/// Bytes of device scratch the int16 activations of m rows of k take.
FW_HD int64_t q16_act_bytes(int64_t m, int64_t k) { return q16_act_scales_offset(m, k) + 4 * m; }

/// A row's scale from its largest magnitude (as ref::quantize_act_i16: not rounded to fp16).
FW_HD float act16_row_scale(float amax) { return amax / 32767.f; }

/// One activation quantized with the row's inverse scale: round to nearest even, clamped to
/// +-32767 (as ref::quantize_act_i16).
FW_HD int16_t act16_quant(float v, float inv_scale) {
  return static_cast<int16_t>(round_clamp(v * inv_scale, 32767));
}

/// The two int16 halves of a times bytes 0 and 1 (lo) or 2 and 3 (hi) of b, added to c (the
/// dp2a instructions; signed).
FW_HD int32_t dp2a_lo(int32_t a, int32_t b, int32_t c) {
#if defined(__CUDA_ARCH__)
  return __dp2a_lo(a, b, c);
#else
  const auto ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
  return c + static_cast<int16_t>(ua & 0xffffu) * static_cast<int8_t>(ub & 0xffu) +
         static_cast<int16_t>(ua >> 16) * static_cast<int8_t>((ub >> 8) & 0xffu);
#endif
}
FW_HD int32_t dp2a_hi(int32_t a, int32_t b, int32_t c) {
#if defined(__CUDA_ARCH__)
  return __dp2a_hi(a, b, c);
#else
  const auto ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
  return c + static_cast<int16_t>(ua & 0xffffu) * static_cast<int8_t>((ub >> 16) & 0xffu) +
         static_cast<int16_t>(ua >> 16) * static_cast<int8_t>((ub >> 24) & 0xffu);
#endif
}

/// Little-endian 32 bits at a 4-byte aligned p.
FW_HD int32_t load_i32_a4(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const int32_t*>(p);
#else
  return static_cast<int32_t>(static_cast<uint32_t>(load_u16(p)) | (static_cast<uint32_t>(load_u16(p + 2)) << 16));
#endif
}

/// The integer part of one 32-value chunk: `w` its 4 words of nibbles (byte j: value j low,
/// j + 16 high), `x` its 32 int16 activations as 16 words (value 2 i in the low half of word i).
FW_HD int32_t w4_chunk_isum(const int32_t* w, const int32_t* x, int32_t acc) {
  FW_UNROLL for (int i = 0; i < 4; ++i) {
    const int32_t lo = w[i] & 0x0f0f0f0f;                                                    // values 4 i ..
    const int32_t hi = static_cast<int32_t>((static_cast<uint32_t>(w[i]) >> 4) & 0x0f0f0f0fu);  // 16 + 4 i ..
    acc = dp2a_lo(x[2 * i], lo, acc);
    acc = dp2a_hi(x[2 * i + 1], lo, acc);
    acc = dp2a_lo(x[8 + 2 * i], hi, acc);
    acc = dp2a_hi(x[8 + 2 * i + 1], hi, acc);
  }
  return acc;
}

/// One group's term (before the row scale), the reference's step: fma(d, isum, m * xsum).
FW_HD float w4_group_term(uint16_t d_bits, uint16_t m_bits, int32_t isum, int32_t xsum) {
#if defined(__CUDA_ARCH__)
  return fmaf(half_to_float(d_bits), static_cast<float>(isum), half_to_float(m_bits) * static_cast<float>(xsum));
#else
  return std::fma(half_to_float(d_bits), static_cast<float>(isum), half_to_float(m_bits) * static_cast<float>(xsum));
#endif
}

/// Calls f(g) for the groups a lane takes of a row of ng groups (g = lane, lane + 32, ...).
template <class Fn>
FW_HD void for_lane_groups(int lane, int64_t ng, Fn&& f) {
  for (int64_t g = lane; g < ng; g += 32) f(g);
}

}  // namespace fw::cuda
