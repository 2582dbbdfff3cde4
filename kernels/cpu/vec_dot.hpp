// Dot-product kernels between weight rows (any supported GGUF type) and activation rows: one row
// by one (dot), several weight rows by one activation row (gemv), blocks of both (gemm), and an
// optional packed weight layout with its own product (pack, packed_gemm). Quantized weights
// (q4_0, q4_1, q8_0) are multiplied with activations quantized on the fly to 8-bit blocks
// (block_q8x), the way llama.cpp does, so integer SIMD does the work; float weights (f32, f16,
// bf16) take float activations. Every kernel has a scalar reference; SIMD paths are
// chosen at run time and tested against it. Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/cpu_features.hpp"
#include "kernels/format/block_q8x.hpp"
#include "kernels/format/ggml_type.hpp"
#include "kernels/ref/vec_dot_ref.hpp"

namespace fw::cpu {


/// Activation format a weight type's kernel consumes: floats, 8-bit blocks of 32 (the ggml
/// formats), or one whole row at 8 / 16 bits with one scale per token (flywheel's W8A8 / W4A16).
enum class act_format { f32, q8x, i8_row, i16_row };

/// w_row: k elements of the weight type; x_row: k activations in the kernel's act_format.
using vec_dot_fn = float (*)(int64_t k, const void* w_row, const void* x_row);
/// Quantizes k floats (k % 32 == 0) into k / 32 blocks.
using quantize_q8x_fn = void (*)(const float* x, block_q8x* y, int64_t k);
/// Quantizes k floats into one activation row (i8_row / i16_row); fixed_scale > 0: a static
/// scale instead of the row's own.
using quantize_row_fn = void (*)(const float* x, void* y, int64_t k, float fixed_scale);
/// out[r] = dot(k, w_rows + r * row_stride, x) for r in [0, n_rows): several weight rows against
/// one activation row in one call (rows one after another: measured the best order for unpacked
/// weights streamed from DRAM; packed weights go through packed_gemm with n_x = 1).
using gemv_rows_fn = void (*)(int64_t k, const void* w_rows, size_t row_stride, int64_t n_rows,
                              const void* x_row, float* out);
/// y[j * ldy + i] = dot(k, w_rows + i * w_stride, x_rows + j * x_stride) for i in [0, n_w),
/// j in [0, n_x): a block of weight rows against a block of activation rows (prefill, batched
/// decode, verification). SIMD paths work in register tiles that reuse each loaded weight for
/// several activation rows and each prepared activation for several weight rows.
using gemm_rows_fn = void (*)(int64_t k, const void* w_rows, size_t w_stride, int64_t n_w,
                              const void* x_rows, size_t x_stride, int64_t n_x, float* y, int64_t ldy);

// -- packed weights (optional, per path) --
// A path may offer a packed layout of a weight matrix: rows interleaved in groups of
// `packed_group_rows` so that one SIMD lane serves one row and a block's integer dot product is
// finished in its lane (no per-block shuffles). The packed matrix has exactly the bytes of the
// original (n rows x row_bytes) and the same addressing by row: the group holding rows
// [16 g, 16 g + 16) starts at byte 16 g * row_bytes, and rows past the last whole group are kept
// unchanged. Results equal the reference within the SIMD tolerance (not bit for bit with `dot`:
// the sums run in another order).
inline constexpr int64_t packed_group_rows = 16;
/// Packs n_rows rows of k elements (src rows row_stride apart) into dst (n_rows * row_bytes).
using pack_rows_fn = void (*)(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst);
/// y[j * ldy + i] = dot(packed row i, x row j) for i in [0, n_rows), j in [0, n_x). `packed`
/// points at a group start (a row index that is a multiple of packed_group_rows); n_rows may end
/// inside the unpacked tail.
using packed_gemm_fn = void (*)(int64_t k, const void* packed, int64_t n_rows, const void* x_rows,
                                size_t x_stride, int64_t n_x, float* y, int64_t ldy);

/// A path's packed layout of one weight type (pack and its product); both null when none.
struct packed_layout {
  pack_rows_fn pack = nullptr;
  packed_gemm_fn gemm = nullptr;
};

/// One weight type's kernel set on one SIMD level.
struct dot_kernel {
  ggml_type type;
  simd_level level;  ///< the path actually used (may be lower than asked: a fallback)
  act_format act;
  vec_dot_fn dot;
  quantize_q8x_fn quantize;  ///< non-null when act == q8x
  gemv_rows_fn gemv = nullptr;  ///< same result as `dot` per row (bit for bit on each path)
  gemm_rows_fn gemm = nullptr;  ///< same result as `dot` per element (bit for bit on each path)
  pack_rows_fn pack = nullptr;  ///< set when this path has a packed layout for the type
  packed_gemm_fn packed_gemm = nullptr;  ///< the product on packed weights (with `pack`)
  quantize_row_fn quantize_row = nullptr;  ///< non-null when act is i8_row or i16_row
  /// packed_gemm runs on AMX int8 tiles (simd_level::amx on a host with AMX) from
  /// amx::amx_min_rows activation rows, bit for bit the AVX-512 VNNI packed product's results.
  bool amx_int8 = false;
};

/// Bytes of one activation row of k values in format `act` (f32: 4 k).
size_t act_row_bytes(act_format act, int64_t k);

/// The best kernel for `type` at or below `max_level` that the host supports (avx512 needs VNNI).
/// `gemv` and `gemm` are always set (`gemv` walks the rows with `dot`; `gemm` is register-tiled on
/// avx512 and, for the quantized types, avx2, and a loop over `dot` elsewhere); `pack` / `packed_gemm` only where a packed layout exists.
dot_kernel select_dot_kernel(ggml_type type, simd_level max_level);

// -- per-path entry points (exposed for tests) --
namespace avx2 {
void quantize_q8x(const float* x, block_q8x* y, int64_t k);
float dot_f32(int64_t k, const void* w, const void* x);
float dot_f16(int64_t k, const void* w, const void* x);
float dot_bf16(int64_t k, const void* w, const void* x);
float dot_q4_0(int64_t k, const void* w, const void* x);
float dot_q4_1(int64_t k, const void* w, const void* x);
float dot_q8_0(int64_t k, const void* w, const void* x);
/// Tiles of 1 weight row x 4 activation rows (weights unpacked once per 4 rows); gemv: 4 weight
/// rows x 1 activation row.
void gemm_q4_0(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx,
               float* y, int64_t ldy);
void gemm_q4_1(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx,
               float* y, int64_t ldy);
void gemm_q8_0(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx,
               float* y, int64_t ldy);
void gemv_q4_0(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, float* out);
void gemv_q4_1(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, float* out);
void gemv_q8_0(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, float* out);
/// The packed layout of `type` on this path (vec_dot_packed_avx2.cpp: the ggml types in the
/// layout of packed_rows.hpp, register tiles of up to 4 activation rows).
packed_layout packed_layout_for(ggml_type type);
/// How vpdpbusd is encoded: VEX (AVX-VNNI) or EVEX (AVX-512 VNNI + VL, on 16 ymm registers).
enum class vnni_encoding { vex, evex };
/// The same tiles (same layout, bit for bit the same results) with the int8 products done by
/// 256-bit vpdpbusd (simd_level::avx2_vnni): q4_0, q4_1, q8_0; both null for other types. The EVEX
/// encoding runs on AVX-512 VNNI hosts, which thereby test what AVX-VNNI hosts run.
packed_layout vnni_packed_layout_for(ggml_type type, vnni_encoding encoding);
}  // namespace avx2
namespace avx512 {  // AVX-512 F/BW/VL/DQ + VNNI
void quantize_q8x(const float* x, block_q8x* y, int64_t k);
float dot_f32(int64_t k, const void* w, const void* x);
float dot_f16(int64_t k, const void* w, const void* x);
float dot_bf16(int64_t k, const void* w, const void* x);
float dot_q4_0(int64_t k, const void* w, const void* x);
float dot_q4_1(int64_t k, const void* w, const void* x);
float dot_q8_0(int64_t k, const void* w, const void* x);
void gemm_f32(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx,
              float* y, int64_t ldy);
void gemm_f16(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx,
              float* y, int64_t ldy);
void gemm_bf16(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx,
               float* y, int64_t ldy);
void gemm_q4_0(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx,
               float* y, int64_t ldy);
void gemm_q4_1(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx,
               float* y, int64_t ldy);
void gemm_q8_0(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx,
               float* y, int64_t ldy);
/// The packed layout of `type` on this path (vec_dot_packed_avx512.cpp): both null when none.
packed_layout packed_layout_for(ggml_type type);
}  // namespace avx512
namespace amx {  // AVX-512 VNNI + AMX-INT8 tiles
/// Activation rows from which a product takes the tiles (fewer: the AVX-512 path, same results).
inline constexpr int64_t amx_min_rows = 4;
/// The packed fw_w8a8 product on AMX int8 tiles (fw_dot_packed_amx.cpp): tiles of up to 16
/// activation rows x 16 weight rows per activation group; results bit for bit those of
/// avx512::packed_layout_for(type).gemm. Both null for other types (the GGUF block formats keep
/// the AVX-512 product: a tile product per 32-channel block does half a tile's work for the same
/// loads and store, which are what the tiles cost).
packed_layout packed_layout_for(ggml_type type);
}  // namespace amx

}  // namespace fw::cpu
