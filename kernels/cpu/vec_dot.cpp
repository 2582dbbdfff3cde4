#include "kernels/cpu/vec_dot.hpp"

namespace fw::cpu {
namespace {

// gemv walks the rows with the path's dot (one row after another is what the hardware prefetchers
// follow best when weights stream from DRAM); gemm likewise where a path has no tiled kernel.
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

template <vec_dot_fn Dot, gemm_rows_fn Gemm = gemm_by_rows<Dot>>
dot_kernel make(ggml_type t, simd_level lvl, quantize_q8x_fn quant, pack_rows_fn pack = nullptr,
                packed_gemm_fn packed = nullptr) {
  const act_format act = quant ? act_format::q8x : act_format::f32;
  return {t, lvl, act, Dot, quant, gemv_by_rows<Dot>, Gemm, pack, packed};
}

dot_kernel select_ref(ggml_type t) {
  namespace k = ref;
  const auto lvl = simd_level::scalar;
  switch (t) {
    case ggml_type::f32: return make<k::dot_f32>(t, lvl, nullptr);
    case ggml_type::f16: return make<k::dot_f16>(t, lvl, nullptr);
    case ggml_type::bf16: return make<k::dot_bf16>(t, lvl, nullptr);
    case ggml_type::q4_0: return make<k::dot_q4_0>(t, lvl, k::quantize_q8x);
    case ggml_type::q4_1: return make<k::dot_q4_1>(t, lvl, k::quantize_q8x);
    case ggml_type::q8_0: return make<k::dot_q8_0>(t, lvl, k::quantize_q8x);
  }
  return make<k::dot_f32>(t, lvl, nullptr);
}

dot_kernel select_avx2(ggml_type t) {
  namespace k = avx2;
  const auto lvl = simd_level::avx2;
  switch (t) {
    case ggml_type::f32: return make<k::dot_f32>(t, lvl, nullptr);
    case ggml_type::f16: return make<k::dot_f16>(t, lvl, nullptr);
    case ggml_type::bf16: return make<k::dot_bf16>(t, lvl, nullptr);
    case ggml_type::q4_0: return make<k::dot_q4_0>(t, lvl, k::quantize_q8x);
    case ggml_type::q4_1: return make<k::dot_q4_1>(t, lvl, k::quantize_q8x);
    case ggml_type::q8_0: return make<k::dot_q8_0>(t, lvl, k::quantize_q8x);
  }
  return select_ref(t);
}

dot_kernel select_avx512(ggml_type t) {
  namespace k = avx512;
  const auto lvl = simd_level::avx512;
  const auto p = k::packed_layout_for(t);
  switch (t) {
    case ggml_type::f32: return make<k::dot_f32, k::gemm_f32>(t, lvl, nullptr, p.pack, p.gemm);
    case ggml_type::f16: return make<k::dot_f16, k::gemm_f16>(t, lvl, nullptr, p.pack, p.gemm);
    case ggml_type::bf16: return make<k::dot_bf16, k::gemm_bf16>(t, lvl, nullptr, p.pack, p.gemm);
    case ggml_type::q4_0: return make<k::dot_q4_0, k::gemm_q4_0>(t, lvl, k::quantize_q8x, p.pack, p.gemm);
    case ggml_type::q4_1: return make<k::dot_q4_1, k::gemm_q4_1>(t, lvl, k::quantize_q8x, p.pack, p.gemm);
    case ggml_type::q8_0: return make<k::dot_q8_0, k::gemm_q8_0>(t, lvl, k::quantize_q8x, p.pack, p.gemm);
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
