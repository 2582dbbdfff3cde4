// fw_dot: the SIMD entry points of flywheel's own formats (W8A8 and W4A16, see
// kernels/format/fw_formats.hpp); select_dot_kernel (vec_dot.hpp) hands them out. The scalar
// definitions are kernels/ref/fw_dot_ref.hpp. The AVX-512 path has no activation quantizers of
// its own (a row's quantization costs ~1/n of its product: AVX2's serve). Thread-safety: pure
// functions.
#pragma once

#include <cstddef>
#include <cstdint>

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
/// Packed layouts (vec_dot.hpp's pack_rows_fn / packed_gemm_fn contract), bit for bit equal to
/// the reference like every fw kernel.
void pack_w8a8(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst);
void packed_gemm_w8a8(int64_t k, const void* w, int64_t n_rows, const void* x, size_t xs, int64_t nx, float* y,
                      int64_t ldy);
template <int G> void pack_w4a16(const void* src, size_t row_stride, int64_t n_rows, int64_t k, void* dst);
template <int G>
void packed_gemm_w4a16(int64_t k, const void* w, int64_t n_rows, const void* x, size_t xs, int64_t nx, float* y,
                       int64_t ldy);
}  // namespace fw::cpu::avx512
