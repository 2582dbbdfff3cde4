// elementwise: residual additions, biases, the SwiGLU gate and row gathers.
// Thread-safety: see cuda_kernels.hpp.
#include "kernels/cuda/cuda_kernels.hpp"

namespace fw::cuda {
namespace {

constexpr int threads = 256;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + threads - 1) / threads); }

__global__ void add_kernel(float* y, const float* __restrict__ x, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * threads + threadIdx.x;
  if (i < n) y[i] += x[i];
}

__global__ void add_bias_kernel(float* y, int64_t ldy, const float* __restrict__ bias, int64_t width, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * threads + threadIdx.x;
  if (i < n) y[(i / width) * ldy + i % width] += bias[i % width];
}

__global__ void silu_mul_kernel(float* gu, int64_t ld, int64_t ff, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * threads + threadIdx.x;
  if (i >= n) return;
  float* g = gu + (i / ff) * ld + i % ff;
  const float a = *g;
  *g = a / (1.f + expf(-a)) * g[ff];
}

__global__ void gather_kernel(const float* __restrict__ x, int64_t ldx, const int32_t* __restrict__ index,
                              int64_t width, float* __restrict__ y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * threads + threadIdx.x;
  if (i < n) y[i] = x[static_cast<int64_t>(index[i / width]) * ldx + i % width];
}

}  // namespace

void add(float* y, const float* x, int64_t n, cudaStream_t s) {
  if (n > 0) add_kernel<<<blocks_for(n), threads, 0, s>>>(y, x, n);
}

void add_bias(float* y, int64_t ldy, const float* bias, int64_t width, int64_t rows, cudaStream_t s) {
  if (rows > 0) add_bias_kernel<<<blocks_for(rows * width), threads, 0, s>>>(y, ldy, bias, width, rows * width);
}

void silu_mul(float* gu, int64_t ld, int64_t ff, int64_t rows, cudaStream_t s) {
  if (rows > 0) silu_mul_kernel<<<blocks_for(rows * ff), threads, 0, s>>>(gu, ld, ff, rows * ff);
}

void gather_rows(const float* x, int64_t ldx, const int32_t* index, int64_t n, int64_t width, float* y,
                 cudaStream_t s) {
  if (n > 0) gather_kernel<<<blocks_for(n * width), threads, 0, s>>>(x, ldx, index, width, y, n * width);
}

}  // namespace fw::cuda
