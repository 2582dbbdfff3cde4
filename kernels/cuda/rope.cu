// rope: rotary position embedding of q and k, from a per-row table of (cos, sin) pairs made on
// the host exactly as the CPU backend makes them (kernels/cpu rope_cos_sin), so both devices turn
// by the same angles. "normal" pairs (2i, 2i + 1) or neox pairs (i, i + n_rot / 2).
// One block per row, a thread per (head, pair). Thread-safety: see cuda_kernels.hpp.
#include "kernels/cuda/cuda_kernels.hpp"

namespace fw::cuda {
namespace {

__global__ void rope_kernel(float* qkv, int64_t ld, int n_heads, int head_dim, int n_rot,
                            const float* __restrict__ cos_sin, bool neox) {
  const int64_t r = blockIdx.x;
  const int pairs = n_rot / 2;
  float* row = qkv + r * ld;
  const float* cs = cos_sin + r * n_rot;
  for (int i = threadIdx.x; i < n_heads * pairs; i += blockDim.x) {
    const int h = i / pairs, p = i % pairs;
    float* v = row + static_cast<int64_t>(h) * head_dim;  // q heads, then k heads right after
    float* a = neox ? v + p : v + 2 * p;
    float* b = neox ? v + p + pairs : v + 2 * p + 1;
    const float c = cs[2 * p], s = cs[2 * p + 1];
    const float x0 = *a, x1 = *b;
    *a = x0 * c - x1 * s;
    *b = x0 * s + x1 * c;
  }
}

}  // namespace

void rope(float* qkv, int64_t ld, int64_t rows, int n_head, int n_head_kv, int head_dim, int n_rot,
          const float* cos_sin, bool neox, cudaStream_t s) {
  if (rows > 0 && n_rot > 0)
    rope_kernel<<<static_cast<unsigned>(rows), 256, 0, s>>>(qkv, ld, n_head + n_head_kv, head_dim, n_rot, cos_sin, neox);
}

}  // namespace fw::cuda
