#include "kernels/cpu/vec_dot.hpp"

namespace fw::cpu {
namespace {

// gemv and gemm built from a one-row dot, for the paths without dedicated multi-row kernels.
template <vec_dot_fn Dot>
void gemv_by_rows(int64_t k, const void* w, size_t stride, int64_t n, const void* x, float* out) {
  const auto* p = static_cast<const uint8_t*>(w);
  for (int64_t r = 0; r < n; ++r) out[r] = Dot(k, p + r * stride, x);
}

template <vec_dot_fn Dot>
void gemm_by_rows(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
                  int64_t ldy) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  for (int64_t j = 0; j < nx; ++j)
    for (int64_t i = 0; i < nw; ++i) y[j * ldy + i] = Dot(k, wp + i * ws, xp + j * xs);
}

template <vec_dot_fn Dot>
dot_kernel by_rows(ggml_type t, simd_level lvl, act_format act, quantize_q8x_fn quant) {
  return {t, lvl, act, Dot, quant, gemv_by_rows<Dot>, gemm_by_rows<Dot>};
}

dot_kernel select_ref(ggml_type t) {
  switch (t) {
    case ggml_type::f32: return by_rows<ref::dot_f32>(t, simd_level::scalar, act_format::f32, nullptr);
    case ggml_type::f16: return by_rows<ref::dot_f16>(t, simd_level::scalar, act_format::f32, nullptr);
    case ggml_type::bf16: return by_rows<ref::dot_bf16>(t, simd_level::scalar, act_format::f32, nullptr);
    case ggml_type::q4_0: return by_rows<ref::dot_q4_0>(t, simd_level::scalar, act_format::q8x, ref::quantize_q8x);
    case ggml_type::q4_1: return by_rows<ref::dot_q4_1>(t, simd_level::scalar, act_format::q8x, ref::quantize_q8x);
    case ggml_type::q8_0: return by_rows<ref::dot_q8_0>(t, simd_level::scalar, act_format::q8x, ref::quantize_q8x);
  }
  return by_rows<ref::dot_f32>(t, simd_level::scalar, act_format::f32, nullptr);
}

dot_kernel select_avx2(ggml_type t) {
  const auto lvl = simd_level::avx2;
  switch (t) {
    case ggml_type::f32: return by_rows<avx2::dot_f32>(t, lvl, act_format::f32, nullptr);
    case ggml_type::f16: return by_rows<avx2::dot_f16>(t, lvl, act_format::f32, nullptr);
    case ggml_type::bf16: return by_rows<avx2::dot_bf16>(t, lvl, act_format::f32, nullptr);
    case ggml_type::q4_0: return by_rows<avx2::dot_q4_0>(t, lvl, act_format::q8x, avx2::quantize_q8x);
    case ggml_type::q4_1: return by_rows<avx2::dot_q4_1>(t, lvl, act_format::q8x, avx2::quantize_q8x);
    case ggml_type::q8_0: return by_rows<avx2::dot_q8_0>(t, lvl, act_format::q8x, avx2::quantize_q8x);
  }
  return select_ref(t);
}

dot_kernel select_avx512(ggml_type t) {
  const auto lvl = simd_level::avx512;
  switch (t) {
    case ggml_type::f32: return {t, lvl, act_format::f32, avx512::dot_f32, nullptr, avx512::gemv_f32, avx512::gemm_f32};
    case ggml_type::f16: return {t, lvl, act_format::f32, avx512::dot_f16, nullptr, avx512::gemv_f16, avx512::gemm_f16};
    case ggml_type::bf16: return {t, lvl, act_format::f32, avx512::dot_bf16, nullptr, avx512::gemv_bf16, avx512::gemm_bf16};
    case ggml_type::q4_0:
      return {t, lvl, act_format::q8x, avx512::dot_q4_0, avx512::quantize_q8x, avx512::gemv_q4_0, avx512::gemm_q4_0};
    case ggml_type::q4_1:
      return {t, lvl, act_format::q8x, avx512::dot_q4_1, avx512::quantize_q8x, avx512::gemv_q4_1, avx512::gemm_q4_1};
    case ggml_type::q8_0:
      return {t, lvl, act_format::q8x, avx512::dot_q8_0, avx512::quantize_q8x, avx512::gemv_q8_0, avx512::gemm_q8_0};
  }
  return select_avx2(t);
}

}  // namespace

dot_kernel select_dot_kernel(ggml_type type, simd_level max_level) {
  // Never hand out a path the host cannot run, whatever the cap says.
  const auto& host = host_features();
  if (max_level >= simd_level::avx512 && host.has_avx512_vnni()) return select_avx512(type);
  if (max_level >= simd_level::avx2 && host.has_avx2()) return select_avx2(type);
  return select_ref(type);
}

}  // namespace fw::cpu
