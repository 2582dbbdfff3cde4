// Dot-product kernels between one weight row (any supported GGUF type) and one activation row.
// Quantized weights (q4_0, q4_1, q8_0) are multiplied with activations quantized on the fly to
// 8-bit blocks (block_q8x), the way llama.cpp does, so integer SIMD does the work; float weights
// (f32, f16, bf16) take float activations. Every kernel has a scalar reference; SIMD paths are
// chosen at run time and tested against it. Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/cpu_features.hpp"
#include "runtime/ggml_type.hpp"

namespace fw::cpu {

/// 32 activations quantized to int8 with one scale: x ~= d * qs[i]; sum = sum of qs.
struct block_q8x {
  float d;
  int32_t sum;
  int8_t qs[32];
};
static_assert(sizeof(block_q8x) == 40);

/// Activation format a weight type's kernel consumes.
enum class act_format { f32, q8x };

/// w_row: k elements of the weight type; x_row: k activations in the kernel's act_format.
using vec_dot_fn = float (*)(int64_t k, const void* w_row, const void* x_row);
/// Quantizes k floats (k % 32 == 0) into k / 32 blocks.
using quantize_q8x_fn = void (*)(const float* x, block_q8x* y, int64_t k);
/// out[r] = dot(k, w_rows + r * row_stride, x) for r in [0, n_rows): several weight rows against
/// one activation row, so a SIMD path loads and prepares the activations once per group of rows
/// (decode is memory-bound; this is the kernel a matrix-vector product should call).
using gemv_rows_fn = void (*)(int64_t k, const void* w_rows, size_t row_stride, int64_t n_rows,
                              const void* x_row, float* out);
/// y[j * ldy + i] = dot(k, w_rows + i * w_stride, x_rows + j * x_stride) for i in [0, n_w),
/// j in [0, n_x): a block of weight rows against a block of activation rows (prefill, batched
/// decode, verification). SIMD paths work in register tiles that reuse each loaded weight for
/// several activation rows and each prepared activation for several weight rows.
using gemm_rows_fn = void (*)(int64_t k, const void* w_rows, size_t w_stride, int64_t n_w,
                              const void* x_rows, size_t x_stride, int64_t n_x, float* y, int64_t ldy);

/// One weight type's kernel set on one SIMD level.
struct dot_kernel {
  ggml_type type;
  simd_level level;  ///< the path actually used (may be lower than asked: a fallback)
  act_format act;
  vec_dot_fn dot;
  quantize_q8x_fn quantize;  ///< non-null when act == q8x
  gemv_rows_fn gemv = nullptr;  ///< same result as `dot` per row (bit for bit on each path)
  gemm_rows_fn gemm = nullptr;  ///< same result as `dot` per element (bit for bit on each path)
};

/// The best kernel for `type` at or below `max_level` that the host supports (avx512 needs VNNI).
/// `gemv` and `gemm` are always set: register-tiled kernels on avx512, loops over `dot` elsewhere.
dot_kernel select_dot_kernel(ggml_type type, simd_level max_level);

// -- per-path entry points (exposed for tests) --
namespace ref {
void quantize_q8x(const float* x, block_q8x* y, int64_t k);
float dot_f32(int64_t k, const void* w, const void* x);
float dot_f16(int64_t k, const void* w, const void* x);
float dot_bf16(int64_t k, const void* w, const void* x);
float dot_q4_0(int64_t k, const void* w, const void* x);
float dot_q4_1(int64_t k, const void* w, const void* x);
float dot_q8_0(int64_t k, const void* w, const void* x);
}  // namespace ref
namespace avx2 {
void quantize_q8x(const float* x, block_q8x* y, int64_t k);
float dot_f32(int64_t k, const void* w, const void* x);
float dot_f16(int64_t k, const void* w, const void* x);
float dot_bf16(int64_t k, const void* w, const void* x);
float dot_q4_0(int64_t k, const void* w, const void* x);
float dot_q4_1(int64_t k, const void* w, const void* x);
float dot_q8_0(int64_t k, const void* w, const void* x);
}  // namespace avx2
namespace avx512 {  // AVX-512 F/BW/VL/DQ + VNNI
void quantize_q8x(const float* x, block_q8x* y, int64_t k);
float dot_f32(int64_t k, const void* w, const void* x);
float dot_f16(int64_t k, const void* w, const void* x);
float dot_bf16(int64_t k, const void* w, const void* x);
float dot_q4_0(int64_t k, const void* w, const void* x);
float dot_q4_1(int64_t k, const void* w, const void* x);
float dot_q8_0(int64_t k, const void* w, const void* x);
void gemv_f32(int64_t k, const void* w, size_t stride, int64_t n, const void* x, float* out);
void gemv_f16(int64_t k, const void* w, size_t stride, int64_t n, const void* x, float* out);
void gemv_bf16(int64_t k, const void* w, size_t stride, int64_t n, const void* x, float* out);
void gemv_q4_0(int64_t k, const void* w, size_t stride, int64_t n, const void* x, float* out);
void gemv_q4_1(int64_t k, const void* w, size_t stride, int64_t n, const void* x, float* out);
void gemv_q8_0(int64_t k, const void* w, size_t stride, int64_t n, const void* x, float* out);
void gemm_f32(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y, int64_t ldy);
void gemm_f16(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y, int64_t ldy);
void gemm_bf16(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y, int64_t ldy);
void gemm_q4_0(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y, int64_t ldy);
void gemm_q4_1(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y, int64_t ldy);
void gemm_q8_0(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y, int64_t ldy);
}  // namespace avx512

}  // namespace fw::cpu
