// rms_norm: y = x / sqrt(mean(x^2) + eps) * weight over segments of rows (the whole row, or each
// head of q and k for Qwen3's per-head norms). One block per (row, segment).
// Thread-safety: see cuda_kernels.hpp.
#include "kernels/cuda/cuda_kernels.hpp"

namespace fw::cuda {
namespace {

constexpr int threads = 256;

__global__ void rms_norm_kernel(const float* x, int64_t ldx, const float* __restrict__ w, float* y, int64_t ldy,
                                int64_t width, int64_t segments, float eps) {
  const int64_t r = blockIdx.x / segments, h = blockIdx.x % segments;
  const float* xs = x + r * ldx + h * width;
  float* ys = y + r * ldy + h * width;
  float ss = 0.f;
  for (int64_t i = threadIdx.x; i < width; i += threads) ss += xs[i] * xs[i];
  __shared__ float part[threads / 32];
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = ss;
  __syncthreads();
  float total = 0.f;
  for (int i = 0; i < threads / 32; ++i) total += part[i];
  const float scale = rsqrtf(total / static_cast<float>(width) + eps);
  __syncthreads();  // every thread has read xs before any writes ys (they may alias)
  for (int64_t i = threadIdx.x; i < width; i += threads) ys[i] = xs[i] * scale * w[i];
}

}  // namespace

void rms_norm(const float* x, int64_t ldx, const float* weight, float* y, int64_t ldy, int64_t width, int64_t rows,
              int64_t segments, float eps, cudaStream_t s) {
  if (rows <= 0) return;
  rms_norm_kernel<<<static_cast<unsigned>(rows * segments), threads, 0, s>>>(x, ldx, weight, y, ldy, width, segments,
                                                                             eps);
}

}  // namespace fw::cuda
