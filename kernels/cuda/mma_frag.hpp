// mma_frag: the int8 tensor-core product of Q4_0 / Q4_1 / Q8_0 weights with int8 activation
// blocks (q8_act.hpp), and of W8A8 weights with int8 activation groups (w8_act.hpp), for
// prefills and batches of more than 8 rows. One weight block is 32 elements, exactly the k of
// the warp instruction mma.sync.m16n8k32.s32.s8.s8.s32, so one mma gives the integer dot of 16
// weight channels' block b with 8 tokens' block b, and each of its 128 int32 results then takes
// the block's float term (q_block_term, the CPU reference's) in block order: the product keeps
// the CPU's semantics per block, summed in the reference's order. W8A8 adds a scale group's
// blocks (64 or 32 elements) in int32 first, then takes the reference's group step
// (w8_group_term) in group order, and the channel's scale at the end.
//
// Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k32" with .s8; lane = 4 group + quad):
//   A (16 x 32, row-major: weight channels x block elements), four 32-bit registers of 4 int8:
//     a0 = channel group, elements 4 quad .. +3     a1 = channel group + 8, the same elements
//     a2 = channel group, elements 16 + 4 quad ..    a3 = channel group + 8, the same
//   B (32 x 8, column-major: block elements x tokens), two registers:
//     b0 = token group, elements 4 quad .. +3        b1 = token group, elements 16 + 4 quad ..
//   C (16 x 8 int32): c[i] = channel group + 8 (i / 2), token 2 quad + i % 2.
// A Q4 block's 16 bytes hold element j in the low nibble of byte j and 16 + j in the high one,
// so the lane's word of bytes 4 quad .. 4 quad + 3 gives a0 (its low nibbles) and a2 (its high
// nibbles) at once; the nibbles enter the mma as values 0..15 and Q4_0's offset of 8 leaves the
// integer sum as the reference's does (- 8 sum(x)).
//
// Everything but the mma itself is FW_HD: tests/kernels/cuda_math_test.cpp builds the fragments
// of a whole warp on the host, multiplies them by the PTX table above (written there on its own)
// and checks every output against the reference dot products bit for bit.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "kernels/cuda/q16_act.hpp"
#include "kernels/cuda/q8_act.hpp"
#include "kernels/cuda/w8_act.hpp"

namespace fw::cuda {

/// The warp tile of the tensor-core product: MMA_M m16 tiles of weight channels by MMA_N n8
/// tiles of tokens per warp (32 x 32), mma_warps warps per thread block side by side in channels.
inline constexpr int mma_m_tiles = 2, mma_n_tiles = 4, mma_warps = 4;
inline constexpr int mma_warp_channels = 16 * mma_m_tiles, mma_tokens = 8 * mma_n_tiles;
inline constexpr int mma_block_channels = mma_warps * mma_warp_channels;
/// Rows (tokens) from which a product takes the tensor-core path (fewer: dp4a, q8_act.hpp).
inline constexpr int64_t mma_min_rows = 9;

/// A lane's place in the fragments: group = lane / 4 (a row of A, a column of B), quad = lane % 4.
struct mma_lane {
  int group;
  int quad;
};
FW_HD mma_lane mma_lane_of(int lane) { return {lane >> 2, lane & 3}; }

/// Channel (row of A / C, 0..15) and token (column of C, 0..7) of the lane's result c[i].
FW_HD int mma_c_channel(mma_lane l, int i) { return l.group + 8 * (i >> 1); }
FW_HD int mma_c_token(mma_lane l, int i) { return 2 * l.quad + (i & 1); }

/// Bytes of a block of format F (Q4_0 / Q4_1 / Q8_0), and the offset of block b's quants in a
/// row (W8A8: its int8 values after the row header).
template <wfmt F>
FW_HD int64_t q_block_bytes() {
  return F == wfmt::q4_0 ? 18 : F == wfmt::q4_1 ? 20 : 34;
}
template <wfmt F>
FW_HD int64_t q_block_quants(int64_t b) {
  if constexpr (F == wfmt::w8) return w8_row_header + 32 * b;
  return b * q_block_bytes<F>() + (F == wfmt::q4_1 ? 4 : 2);
}

/// Block b's scale d and (Q4_1; else 0) minimum m.
template <wfmt F>
FW_HD void q_block_scales(const uint8_t* row, int64_t b, float& d, float& m) {
  static_assert(F == wfmt::q4_0 || F == wfmt::q4_1 || F == wfmt::q8_0, "blocks with their own scales");
  const uint8_t* blk = row + b * q_block_bytes<F>();
  d = half_to_float(load_u16_a2(blk));
  m = F == wfmt::q4_1 ? half_to_float(load_u16_a2(blk + 2)) : 0.f;
}

/// The half of an A fragment one weight row gives: lo (a0 or a1) and hi (a2 or a3) of block b.
template <wfmt F>
FW_HD void mma_a_half(const uint8_t* row, int64_t b, int quad, uint32_t& lo, uint32_t& hi) {
  const uint8_t* q = row + q_block_quants<F>(b);
  if constexpr (F == wfmt::q8_0) {  // 2-byte aligned blocks
    lo = static_cast<uint32_t>(load_i32_a2(q + 4 * quad));
    hi = static_cast<uint32_t>(load_i32_a2(q + 16 + 4 * quad));
  } else if constexpr (F == wfmt::w8) {  // rows of 32 + k bytes: 4-byte aligned
    lo = static_cast<uint32_t>(load_i32_a4(q + 4 * quad));
    hi = static_cast<uint32_t>(load_i32_a4(q + 16 + 4 * quad));
  } else {
    const auto w = static_cast<uint32_t>(load_i32_a2(q + 4 * quad));
    lo = w & 0x0f0f0f0fu;
    hi = (w >> 4) & 0x0f0f0f0fu;
  }
}

/// The A fragment of block b for the lane: row_g is channel `group` of the m16 tile, row_g8
/// channel group + 8.
template <wfmt F>
FW_HD void mma_a_frag(const uint8_t* row_g, const uint8_t* row_g8, int64_t b, int quad, uint32_t a[4]) {
  mma_a_half<F>(row_g, b, quad, a[0], a[2]);
  mma_a_half<F>(row_g8, b, quad, a[1], a[3]);
}

/// The B fragment of block b for the lane: x_g is token `group`'s int8 activations (k bytes,
/// 4-byte aligned).
FW_HD void mma_b_frag(const int8_t* x_g, int64_t b, int quad, uint32_t f[2]) {
  const auto* p = reinterpret_cast<const uint32_t*>(x_g + 32 * b);
  f[0] = p[quad];
  f[1] = p[4 + quad];
}

/// c += A B for one m16n8k32 int8 tile (device code: the warp's tensor cores, sm_80 and later).
#if defined(__CUDACC__)
__device__ __forceinline__ void mma_s8(int32_t c[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__)
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}
#endif

}  // namespace fw::cuda
