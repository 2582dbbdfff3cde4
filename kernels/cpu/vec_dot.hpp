// Dot-product kernels between one weight row (any supported GGUF type) and one activation row.
// Quantized weights (q4_0, q4_1, q8_0) are multiplied with activations quantized on the fly to
// 8-bit blocks (block_q8x), the way llama.cpp does, so integer SIMD does the work; float weights
// (f32, f16, bf16) take float activations. Every kernel has a scalar reference; SIMD paths are
// chosen at run time and tested against it. Thread-safety: pure functions.
#pragma once

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

/// One weight type's kernel set on one SIMD level.
struct dot_kernel {
  ggml_type type;
  simd_level level;  ///< the path actually used (may be lower than asked: a fallback)
  act_format act;
  vec_dot_fn dot;
  quantize_q8x_fn quantize;  ///< non-null when act == q8x
};

/// The best kernel for `type` at or below `max_level`.
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

}  // namespace fw::cpu
