// q8_act: the integer products of the CUDA kernels for Q4_0, Q4_1 and Q8_0 weights, with the
// CPU's semantics (kernels/ref vec_dot_ref): activations quantized once per product to int8 in
// blocks of 32 with an fp16-rounded scale and the block's sum (ref::quantize_q8x), then per
// weight block one integer dot (dp4a, four int8 products a step) and one float term. Reading
// int8 activations instead of floats cuts what a decode product reads besides the weights 4x, and
// dp4a does 4 multiply-adds an instruction. The activations' device layout (q8_act_bytes): every
// row's k int8 values (rows k bytes apart), then from q8_act_scales_offset each row's k / 32
// (scale, sum) float pairs. Everything here is FW_HD: tests/kernels/cuda_math_test.cpp checks it
// on the host against the references, bit for bit where the references round the same way.
// Thread-safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cuda/cuda_compat.hpp"
#include "kernels/cuda/weight_chunk.hpp"

namespace fw::cuda {

/// Formats whose products take int8 activations (the CPU's integer products).
FW_HD bool int8_act_format(wfmt f) { return f == wfmt::q4_0 || f == wfmt::q4_1 || f == wfmt::q8_0; }

/// Where the (scale, sum) pairs of m rows of k activations start (16-byte aligned).
FW_HD int64_t q8_act_scales_offset(int64_t m, int64_t k) { return (m * k + 15) / 16 * 16; }
/// Bytes of device scratch the int8 activations of m rows of k take.
FW_HD int64_t q8_act_bytes(int64_t m, int64_t k) { return q8_act_scales_offset(m, k) + m * (k / 32) * 8; }

/// A block's scale from its largest magnitude: amax / 127 rounded to fp16 (as ref::quantize_q8x).
FW_HD float act_block_scale(float amax) { return half_to_float(float_to_half(amax / 127.f)); }

/// One activation quantized with the block's inverse scale: round to nearest even, clamped to
/// +-127 (as ref::quantize_q8x).
FW_HD int8_t act_quant(float v, float inv_scale) { return static_cast<int8_t>(round_clamp(v * inv_scale, 127)); }

/// Four int8 products of a and b added to c (the dp4a instruction; signed bytes).
FW_HD int32_t dp4a(int32_t a, int32_t b, int32_t c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(a, b, c);
#else
  for (int i = 0; i < 4; ++i)
    c += static_cast<int32_t>(static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * i))) *
         static_cast<int32_t>(static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * i)));
  return c;
#endif
}

/// Little-endian 16 bits at a 2-byte aligned p (one load on the device; load_u16 takes any
/// alignment, two byte loads).
FW_HD uint16_t load_u16_a2(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint16_t*>(p);
#else
  return load_u16(p);
#endif
}

/// Little-endian 32 bits at a 2-byte aligned p (two 16-bit loads on the device: the quants of a
/// Q4_0 / Q8_0 block are only 2-byte aligned).
FW_HD int32_t load_i32_a2(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<int32_t>(static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16));
#else
  return static_cast<int32_t>(static_cast<uint32_t>(load_u16(p)) | (static_cast<uint32_t>(load_u16(p + 2)) << 16));
#endif
}

/// One weight block as the integer product reads it: its quants as 32-bit words (Q4: 4 words of
/// 8 nibbles, byte i holding element i low and i + 16 high; Q8_0: 8 words of 4 int8), its scale
/// and (Q4_1) its minimum.
struct q_block {
  int32_t q[8];
  float d;
  float m;
};

/// Block b of a row of format F (int8_act_format(F)).
template <wfmt F>
FW_HD void load_q_block(const uint8_t* row, int64_t b, q_block& out) {
  if constexpr (F == wfmt::q4_0) {
    const uint8_t* p = row + b * 18;
    out.d = half_to_float(load_u16_a2(p));
    out.m = 0.f;
    FW_UNROLL for (int i = 0; i < 4; ++i) out.q[i] = load_i32_a2(p + 2 + 4 * i);
  } else if constexpr (F == wfmt::q4_1) {
    const uint8_t* p = row + b * 20;
    out.d = half_to_float(load_u16_a2(p));
    out.m = half_to_float(load_u16_a2(p + 2));
    FW_UNROLL for (int i = 0; i < 4; ++i) out.q[i] = load_i32_a2(p + 4 + 4 * i);
  } else {
    static_assert(F == wfmt::q8_0, "int8 activations serve q4_0, q4_1 and q8_0");
    const uint8_t* p = row + b * 34;
    out.d = half_to_float(load_u16_a2(p));
    out.m = 0.f;
    FW_UNROLL for (int i = 0; i < 8; ++i) out.q[i] = load_i32_a2(p + 2 + 4 * i);
  }
}

/// A block's float term from its integer dot acc (Q4 nibbles taken as stored, 0..15) with an
/// activation block of scale xd and sum xsum: the reference's expression (ref::dot_q4_0 /
/// dot_q4_1 / dot_q8_0), so equal bit for bit. wm: Q4_1's minimum (unused otherwise).
template <wfmt F>
FW_HD float q_block_term(float wd, float wm, float xd, int32_t xsum, int32_t acc) {
  if constexpr (F == wfmt::q8_0) return wd * xd * static_cast<float>(acc);
  else if constexpr (F == wfmt::q4_0) return wd * xd * static_cast<float>(acc - 8 * xsum);
  else return wd * xd * static_cast<float>(acc) + wm * xd * static_cast<float>(xsum);
}

/// The block's term of the product with one activation block: its 32 int8 values as 8 words
/// (element 4 i + j in byte j of word i), scale xd and sum xsum.
template <wfmt F>
FW_HD float q_block_dot(const q_block& w, const int32_t* x, float xd, int32_t xsum) {
  int32_t acc = 0;
  if constexpr (F == wfmt::q8_0) {
    FW_UNROLL for (int i = 0; i < 8; ++i) acc = dp4a(w.q[i], x[i], acc);
  } else {
    FW_UNROLL for (int i = 0; i < 4; ++i) {
      acc = dp4a(w.q[i] & 0x0f0f0f0f, x[i], acc);                                  // elements 4 i ..
      acc = dp4a(static_cast<int32_t>((static_cast<uint32_t>(w.q[i]) >> 4) & 0x0f0f0f0fu), x[4 + i], acc);  // 16 + 4 i ..
    }
  }
  return q_block_term<F>(w.d, w.m, xd, xsum, acc);
}

/// Calls f(b) for the blocks a lane takes of a row of nb blocks (b = lane, lane + 32, ...), two
/// at a time so that both blocks' loads are in flight together.
template <class Fn>
FW_HD void for_lane_blocks(int lane, int64_t nb, Fn&& f) {
  int64_t b = lane;
  for (; b + 32 < nb; b += 64) {
    f(b);
    f(b + 32);
  }
  if (b < nb) f(b);
}

}  // namespace fw::cuda
