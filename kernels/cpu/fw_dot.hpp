// fw_dot: the SIMD entry points of flywheel's own formats (W8A8 and W4A16, see
// kernels/format/fw_formats.hpp); select_dot_kernel (vec_dot.hpp) hands them out. The scalar
// definitions are kernels/ref/fw_dot_ref.hpp. The AVX-512 path has no activation quantizers of
// its own (a row's quantization costs ~1/n of its product: AVX2's serve). Thread-safety: pure
// functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/vec_dot.hpp"

namespace fw::cpu::avx2 {
void quantize_act_i8(const float* x, void* y, int64_t k, float fixed_scale);
void quantize_act_i16(const float* x, void* y, int64_t k, float fixed_scale);
float dot_w8a8(int64_t k, const void* w, const void* x);
void gemv_w8a8(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, float* out);
void gemm_w8a8(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
               int64_t ldy);
template <int G> float dot_w4a16(int64_t k, const void* w, const void* x);
template <int G> void gemv_w4a16(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, float* out);
template <int G>
void gemm_w4a16(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
                int64_t ldy);
/// Products on the packed layouts of fw_packed_rows.hpp (the AVX-512 path's bytes; 8-row halves
/// of a group per 256-bit vector), bit for bit equal to the reference.
void packed_gemm_w8a8(int64_t k, const void* w, int64_t n_rows, const void* x, size_t xs, int64_t nx, float* y,
                      int64_t ldy);
template <int G>
void packed_gemm_w4a16(int64_t k, const void* w, int64_t n_rows, const void* x, size_t xs, int64_t nx, float* y,
                       int64_t ldy);
/// The W8A8 / W4A16 packed products with 256-bit vpdpbusd / vpdpwssd (simd_level::avx2_vnni; same
/// layouts and results as the two above); both null for other types.
packed_layout fw_vnni_packed_layout_for(ggml_type type, vnni_encoding encoding);
}  // namespace fw::cpu::avx2

namespace fw::cpu::avx512 {  // AVX-512 F/BW/VL + VNNI (fw_dot_avx512.cpp, fw_dot_packed_avx512.cpp)
float dot_w8a8(int64_t k, const void* w, const void* x);
void gemv_w8a8(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, float* out);
void gemm_w8a8(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
               int64_t ldy);
template <int G> float dot_w4a16(int64_t k, const void* w, const void* x);
template <int G> void gemv_w4a16(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, float* out);
template <int G>
void gemm_w4a16(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
                int64_t ldy);
/// Products on the packed layouts of fw_packed_rows.hpp (vec_dot.hpp's packed_gemm_fn contract),
/// bit for bit equal to the reference like every fw kernel.
void packed_gemm_w8a8(int64_t k, const void* w, int64_t n_rows, const void* x, size_t xs, int64_t nx, float* y,
                      int64_t ldy);
template <int G>
void packed_gemm_w4a16(int64_t k, const void* w, int64_t n_rows, const void* x, size_t xs, int64_t nx, float* y,
                       int64_t ldy);
/// -128 * sum(x) per int8 activation row and group of act_i8_group(k) channels (the start value
/// of a group's sum over the packed w + 128 bytes), nx * (k / group) values, row by row; the VNNI
/// and AMX products both use it.
void w8_group_xneg(int64_t k, const void* x, size_t xs, int64_t nx, int32_t* out);
}  // namespace fw::cpu::avx512
