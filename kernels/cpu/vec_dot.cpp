#include "kernels/cpu/vec_dot.hpp"

namespace fw::cpu {

dot_kernel select_dot_kernel(ggml_type type, simd_level max_level) {
  const bool simd = max_level >= simd_level::avx2;
  const simd_level lvl = simd ? simd_level::avx2 : simd_level::scalar;
  const quantize_q8x_fn quant = simd ? avx2::quantize_q8x : ref::quantize_q8x;
  switch (type) {
    case ggml_type::f32:
      return {type, lvl, act_format::f32, simd ? avx2::dot_f32 : ref::dot_f32, nullptr};
    case ggml_type::f16:
      return {type, lvl, act_format::f32, simd ? avx2::dot_f16 : ref::dot_f16, nullptr};
    case ggml_type::bf16:
      return {type, lvl, act_format::f32, simd ? avx2::dot_bf16 : ref::dot_bf16, nullptr};
    case ggml_type::q4_0:
      return {type, lvl, act_format::q8x, simd ? avx2::dot_q4_0 : ref::dot_q4_0, quant};
    case ggml_type::q4_1:
      return {type, lvl, act_format::q8x, simd ? avx2::dot_q4_1 : ref::dot_q4_1, quant};
    case ggml_type::q8_0:
      return {type, lvl, act_format::q8x, simd ? avx2::dot_q8_0 : ref::dot_q8_0, quant};
  }
  return {type, simd_level::scalar, act_format::f32, ref::dot_f32, nullptr};
}

}  // namespace fw::cpu
