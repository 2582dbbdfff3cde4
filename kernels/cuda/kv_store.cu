// kv_store: writes each row's k and v into the KV pool's paged tiles at the row's position
// (K transposed, V by token: attention_math.hpp), as f32 or f16 (round to nearest even).
// One block per (row, kv head), a thread per element. Thread-safety: see cuda_kernels.hpp.
#include "kernels/cuda/cuda_kernels.hpp"

namespace fw::cuda {
namespace {

__global__ void store_kv_kernel(const float* __restrict__ qkv, int64_t ld, int64_t k_off, int64_t v_off,
                                kv_rows kv, kv_pool_desc pool, uint32_t layer) {
  const int64_t r = blockIdx.x;
  const uint32_t h = blockIdx.y;
  const auto& L = pool.layout;
  const int32_t pos = kv.positions[r];
  const uint32_t block = kv.blocks[kv.row_blocks[r] + pos / static_cast<int32_t>(L.block_tokens)];
  const uint32_t t = static_cast<uint32_t>(pos) % L.block_tokens;
  const float* k = qkv + r * ld + k_off + static_cast<int64_t>(h) * L.head_dim;
  const float* v = qkv + r * ld + v_off + static_cast<int64_t>(h) * L.head_dim;
  for (uint32_t e = threadIdx.x; e < L.head_dim; e += blockDim.x) {
    const int64_t ki = L.k_at(block, layer, h, t, e), vi = L.v_at(block, layer, h, t, e);
    if (pool.f16) {
      auto* p = static_cast<uint16_t*>(pool.base);
      p[ki] = float_to_half(k[e]);
      p[vi] = float_to_half(v[e]);
    } else {
      auto* p = static_cast<float*>(pool.base);
      p[ki] = k[e];
      p[vi] = v[e];
    }
  }
}

}  // namespace

void store_kv(const float* qkv, int64_t ld, int64_t k_off, int64_t v_off, int64_t rows, const kv_rows& kv,
              const kv_pool_desc& pool, uint32_t layer, cudaStream_t s) {
  if (rows <= 0) return;
  store_kv_kernel<<<dim3(static_cast<unsigned>(rows), pool.layout.n_head_kv), 128, 0, s>>>(qkv, ld, k_off, v_off, kv,
                                                                                         pool, layer);
}

}  // namespace fw::cuda
