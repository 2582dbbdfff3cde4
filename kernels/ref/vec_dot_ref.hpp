// vec_dot_ref: the scalar reference dot products, one per weight format, and the reference
// activation quantizer: the definition every SIMD path (kernels/cpu) is tested against.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "kernels/format/block_q8x.hpp"

namespace fw::cpu {

namespace ref {
void quantize_q8x(const float* x, block_q8x* y, int64_t k);
float dot_f32(int64_t k, const void* w, const void* x);
float dot_f16(int64_t k, const void* w, const void* x);
float dot_bf16(int64_t k, const void* w, const void* x);
float dot_q4_0(int64_t k, const void* w, const void* x);
float dot_q4_1(int64_t k, const void* w, const void* x);
float dot_q8_0(int64_t k, const void* w, const void* x);
}  // namespace ref

}  // namespace fw::cpu
