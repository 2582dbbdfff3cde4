// packed_rows: the packed layout of the ggml block formats (q4_0, q4_1, q8_0) that the AVX2 and
// AVX-512 paths share, and the packing itself (plain C++ in its own file, compiled without ISA
// flags, so any host may pack whichever path then reads it).
//
// Rows are interleaved in groups of packed_group_rows (16) so that int32 lane r of a vector
// belongs to row r of the group. For block b of a group the 4-byte pieces of all 16 rows sit side
// by side (piece t of row r at byte 64 t + 4 r), followed by the 16 fp16 scales (and q4_1's 16
// mins):
//
//   q4_0: 4 x 64 bytes of nibbles, then d[16]          = 288 bytes = 16 blocks of 18
//   q4_1: 4 x 64 bytes of nibbles, then d[16], m[16]   = 320 bytes = 16 blocks of 20
//   q8_0: 8 x 64 bytes of int8,    then d[16]          = 544 bytes = 16 blocks of 34
//
// Nibble piece t holds elements 4t..4t+3 (low nibbles) and 16+4t..16+4t+3 (high nibbles) of each
// row, matching the activation bytes qs[4t..] and qs[16+4t..]. A 512-bit vector covers a piece of
// all 16 rows; a 256-bit vector the piece of rows 0-7 (bytes 64 t ..) or 8-15 (64 t + 32 ..). The
// group keeps its 16 * row_bytes bytes and its place; rows after the last whole group are copied
// unchanged.
//
// Float weights (f32, f16, bf16) are interleaved per element instead: element i of the 16 rows
// is 16 values side by side (64 bytes for f32, 32 for f16 / bf16), so one load gives lane r =
// row r (rows 0-7 in the first half) and the product is an outer product. Thread-safety: pure
// functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fw::cpu::packed {

struct q4_0_layout {
  static constexpr size_t group_block = 288, d_offset = 256;
};
struct q4_1_layout {
  static constexpr size_t group_block = 320, d_offset = 256, m_offset = 288;
};
struct q8_0_layout {
  static constexpr size_t group_block = 544, d_offset = 512;
};

/// vec_dot.hpp's pack_rows_fn for each format.
void pack_q4_0(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst);
void pack_q4_1(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst);
void pack_q8_0(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst);
void pack_f32(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst);
void pack_f16(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst);
void pack_bf16(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst);

/// q4_1's min term per activation row and block: d_x * sum(x) of each block_q8x, nb floats per row
/// (n_x rows x_stride bytes apart), computed once per product. The buffer is this thread's and
/// valid until its next call.
const float* q8x_min_terms(const void* x, size_t x_stride, int64_t n_x, int64_t nb);

}  // namespace fw::cpu::packed
