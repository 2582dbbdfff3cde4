// quant_ref: scalar reference conversions (part of kernels/format: they define each format) between f32 and the stored element types
// (f16, bf16, q4_0, q4_1, q8_0). These are the ground truth that optimized kernels are tested
// against, and what tools use to write quantized weights. The quantizers reproduce ggml's
// reference quantizers bit for bit. Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "kernels/format/ggml_type.hpp"

namespace fw {

/// IEEE half to float (exact; handles subnormals, infinities and NaN).
float fp16_to_fp32(uint16_t h);
/// Float to IEEE half, rounding to nearest even; overflow gives infinity, NaN stays NaN.
uint16_t fp32_to_fp16(float f);
/// bfloat16 to float (exact).
float bf16_to_fp32(uint16_t h);
/// Float to bfloat16, rounding to nearest even; NaN stays (quiet) NaN.
uint16_t fp32_to_bf16(float f);

namespace format_ref {
/// The reference row conversions of each element type, named in its traits entry (ggml_type.cpp):
/// n elements (a multiple of the block size) to floats and back.
void f32_to_float(const void* src, float* dst, int64_t n);
void f32_from_float(const float* src, void* dst, int64_t n);
void f16_to_float(const void* src, float* dst, int64_t n);
void f16_from_float(const float* src, void* dst, int64_t n);
void bf16_to_float(const void* src, float* dst, int64_t n);
void bf16_from_float(const float* src, void* dst, int64_t n);
void q4_0_to_float(const void* src, float* dst, int64_t n);
void q4_0_from_float(const float* src, void* dst, int64_t n);
void q4_1_to_float(const void* src, float* dst, int64_t n);
void q4_1_from_float(const float* src, void* dst, int64_t n);
void q8_0_to_float(const void* src, float* dst, int64_t n);
void q8_0_from_float(const float* src, void* dst, int64_t n);
}  // namespace format_ref

/// Converts n elements of type t at src to floats. n must be a multiple of t's block size.
/// Supports f32, f16, bf16, q4_0, q4_1 and q8_0.
void dequantize_row_ref(ggml_type t, const void* src, float* dst, int64_t n);

/// Converts n floats to type t, writing row_bytes(type_traits(t), n) bytes at dst.
/// n must be a multiple of t's block size. Supports the same types as dequantize_row_ref.
void quantize_row_ref(ggml_type t, const float* src, void* dst, int64_t n);

}  // namespace fw
