// fw_packed_rows: the packed layouts of flywheel's own formats (fw_w8a8, fw_w4a16) that the AVX2
// and AVX-512 paths share, and the packing itself (plain C++, compiled without ISA flags, so any
// host may pack whichever path then reads it). Rows are interleaved in groups of
// packed_group_rows (16) so that int32 lane r of a vector belongs to row r; a group keeps its
// 16 * row_bytes bytes and its place, rows after the last whole group stay unpacked.
//
//  w8a8 (row: 32-byte header + k int8): for each 4-channel piece p 64 bytes, piece p of row r at
//    byte 64 p + 4 r, stored as w + 128 (the unsigned operand of vpdpbusd; AVX2 flips it back);
//    then the 16 float row scales and zeros up to the group's end (w8_tail bytes).
//  w4a16 g (row: k / g groups of 4 + g / 2 bytes): per group w4_block<g> bytes: 16 fp16 scales,
//    16 fp16 offsets, then g / 8 vectors of 64 bytes; vector v holds channels 8 v .. 8 v + 7 of
//    row r at byte 4 r as [e0 | e2 << 4, e4 | e6 << 4, e1 | e3 << 4, e5 | e7 << 4], so
//    (v >> 4 t) & 0x000f000f is the int16 pair (e_2t, e_2t+1).
// A 256-bit vector covers rows 0-7 of a 64-byte piece (bytes 0-31) or rows 8-15 (32-63).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/format/fw_formats.hpp"

namespace fw::cpu::packed {

/// Bytes after a w8a8 group's pieces: the 16 row headers' 32 bytes (the scales, then zeros).
inline constexpr size_t w8_tail = 512;
/// Bytes of one w4a16 group of channels of 16 rows.
template <int G>
inline constexpr size_t w4_block = 16 * w4_group_bytes(G);

/// vec_dot.hpp's pack_rows_fn for each format.
void pack_w8a8(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst);
template <int G> void pack_w4a16(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst);

/// (float) sum(x) per int16 activation row and group of G channels, from the row's 32-channel
/// chunk sums (the reference's xsum: the same exact integer, the same conversion), k / G floats
/// per row. The buffer is this thread's and valid until its next call.
const float* w4_group_xsums(const void* x, size_t x_stride, int64_t n_x, int64_t k, int g);

}  // namespace fw::cpu::packed
