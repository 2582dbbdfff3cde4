// matmul: y = x w^T for quantized or float weights, dequantizing in registers. One warp per
// output channel and M input rows at a time: each lane decodes 32-element chunks of the weight
// row (chunk j = lane, lane + 32, ...) and multiplies them into its M accumulators, then the warp
// reduces. Decode (M = 1..8) streams each weight byte once; longer batches run ceil(m / 8)
// column blocks of the grid, which reread the weights from L2 (a tensor-core GEMM for prefill is
// the next step). Thread-safety: see cuda_kernels.hpp.
#include "kernels/cuda/cuda_kernels.hpp"

namespace fw::cuda {
namespace {

constexpr int warps_per_block = 8;

template <wfmt F, int M>
__global__ void matmul_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t n, int64_t k,
                              const float* __restrict__ x, int64_t ldx, int64_t m, float* __restrict__ y,
                              int64_t ldy) {
  const int lane = threadIdx.x & 31;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * warps_per_block + (threadIdx.x >> 5);
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * M;
  if (col >= n) return;
  const int rows = static_cast<int>(m - r0 < M ? m - r0 : M);
  const uint8_t* wrow = w + col * row_bytes;
  float acc[M];
#pragma unroll
  for (int r = 0; r < M; ++r) acc[r] = 0.f;
  const int64_t chunks = k / 32;
  for (int64_t j = lane; j < chunks; j += 32) {
    float wv[32];
    decode_chunk<F>(wrow, j, wv);
#pragma unroll
    for (int r = 0; r < M; ++r) {
      if (r < rows) {
        const float4* xv = reinterpret_cast<const float4*>(x + (r0 + r) * ldx + 32 * j);
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const float4 v = __ldg(xv + i);
          s += wv[4 * i] * v.x + wv[4 * i + 1] * v.y + wv[4 * i + 2] * v.z + wv[4 * i + 3] * v.w;
        }
        acc[r] += s;
      }
    }
  }
#pragma unroll
  for (int r = 0; r < M; ++r) {
    float v = acc[r];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0 && r < rows) y[(r0 + r) * ldy + col] = v;
  }
}

template <wfmt F>
void launch(const weight_desc& w, const float* x, int64_t ldx, int64_t m, float* y, int64_t ldy, cudaStream_t s) {
  const dim3 block(32 * warps_per_block);
  const auto cols = static_cast<unsigned>((w.n + warps_per_block - 1) / warps_per_block);
  if (m == 1) {
    matmul_kernel<F, 1><<<dim3(cols, 1), block, 0, s>>>(w.data, w.row_bytes, w.n, w.k, x, ldx, m, y, ldy);
  } else if (m == 2) {
    matmul_kernel<F, 2><<<dim3(cols, 1), block, 0, s>>>(w.data, w.row_bytes, w.n, w.k, x, ldx, m, y, ldy);
  } else if (m <= 4) {
    matmul_kernel<F, 4><<<dim3(cols, 1), block, 0, s>>>(w.data, w.row_bytes, w.n, w.k, x, ldx, m, y, ldy);
  } else {
    const auto groups = static_cast<unsigned>((m + 7) / 8);
    matmul_kernel<F, 8><<<dim3(cols, groups), block, 0, s>>>(w.data, w.row_bytes, w.n, w.k, x, ldx, m, y, ldy);
  }
}

}  // namespace

bool matmul(const weight_desc& w, const float* x, int64_t ldx, int64_t m, float* y, int64_t ldy, cudaStream_t s) {
  if (m <= 0 || w.n <= 0) return true;
  if (w.k % 32 != 0 || ldx % 4 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0) return false;
  switch (w.fmt) {
    case wfmt::f32: launch<wfmt::f32>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::f16: launch<wfmt::f16>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::bf16: launch<wfmt::bf16>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::q4_0: launch<wfmt::q4_0>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::q4_1: launch<wfmt::q4_1>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::q8_0: launch<wfmt::q8_0>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::w8: launch<wfmt::w8>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::w4g32: launch<wfmt::w4g32>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::w4g64: launch<wfmt::w4g64>(w, x, ldx, m, y, ldy, s); break;
    case wfmt::w4g128: launch<wfmt::w4g128>(w, x, ldx, m, y, ldy, s); break;
  }
  return true;
}

}  // namespace fw::cuda
