// attention: split-K ("flash-decoding") attention over the KV pool's paged tiles. Each query
// (row, head)'s keys are cut into plan.chunks chunks; one warp per (query, chunk) walks its keys
// 32 at a time (a lane per key for the scores, reading the transposed K tile coalesced; a lane per
// output dimension for the values), keeping an online softmax (attention_math.hpp). A second
// kernel merges the chunks of each query and writes the output and the attention entropy. A
// decode step of few rows gets many chunks (the GPU stays busy at batch 1); prefill gets one.
// Head sizes: multiples of 32 up to 256. Thread-safety: see cuda_kernels.hpp.
#include "kernels/cuda/cuda_kernels.hpp"

namespace fw::cuda {
namespace {

constexpr int warps = 4;
constexpr int max_head_dim = 256;
constexpr int per_lane = max_head_dim / 32;

__device__ float load_kv(const kv_pool_desc& pool, int64_t i) {
  if (pool.f16) return __half2float(__ushort_as_half(static_cast<const uint16_t*>(pool.base)[i]));
  return static_cast<const float*>(pool.base)[i];
}

__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void partial_kernel(const float* __restrict__ qkv, int64_t ld, int64_t queries, int n_head, int gqa,
                               const int32_t* __restrict__ n_keys, kv_rows kv, kv_pool_desc pool, uint32_t layer,
                               float scale, int chunk_keys, int chunks, float* __restrict__ scratch) {
  __shared__ float sq[warps][max_head_dim];
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t qi = static_cast<int64_t>(blockIdx.x) * warps + w;
  if (qi >= queries) return;
  const int c = blockIdx.y;
  const auto& L = pool.layout;
  const int hd = static_cast<int>(L.head_dim);
  const int64_t r = qi / n_head;
  const int h = static_cast<int>(qi % n_head);
  const uint32_t kvh = static_cast<uint32_t>(h / gqa);
  const float* q = qkv + r * ld + static_cast<int64_t>(h) * hd;
  for (int e = lane; e < hd; e += 32) sq[w][e] = q[e];
  __syncwarp();
  const int begin = c * chunk_keys;
  const int end = min(begin + chunk_keys, n_keys[r]);
  const uint32_t* blocks = kv.blocks + kv.row_blocks[r];
  const int bt = static_cast<int>(L.block_tokens);
  softmax_part part;
  float acc[per_lane];
#pragma unroll
  for (int i = 0; i < per_lane; ++i) acc[i] = 0.f;
  for (int base = begin; base < end; base += 32) {
    const int key = base + lane;
    const bool valid = key < end;
    float s = -INFINITY;
    if (valid) {
      const uint32_t b = blocks[key / bt];
      const int64_t k0 = L.k_at(b, layer, kvh, static_cast<uint32_t>(key % bt), 0);
      float dot = 0.f;
      for (int e = 0; e < hd; ++e) dot += sq[w][e] * load_kv(pool, k0 + static_cast<int64_t>(e) * bt);
      s = dot * scale;
    }
    const float new_m = fmaxf(part.m, warp_max(s));
    const float f = part.l > 0 ? expf(part.m - new_m) : 0.f;
    const float p = valid ? expf(s - new_m) : 0.f;
    const float psum = warp_sum(p), ptsum = warp_sum(valid ? p * (s - new_m) : 0.f);
    part.t = (part.l > 0 ? f * (part.t + (part.m - new_m) * part.l) : 0.f) + ptsum;
    part.l = f * part.l + psum;
    part.m = new_m;
#pragma unroll
    for (int i = 0; i < per_lane; ++i) acc[i] *= f;
    const int n = min(32, end - base);
    for (int j = 0; j < n; ++j) {
      const float pj = __shfl_sync(0xffffffffu, p, j);
      const int kj = base + j;
      const int64_t v0 = L.v_at(blocks[kj / bt], layer, kvh, static_cast<uint32_t>(kj % bt), 0);
#pragma unroll
      for (int i = 0; i < per_lane; ++i) {
        const int e = lane + 32 * i;
        if (e < hd) acc[i] += pj * load_kv(pool, v0 + e);
      }
    }
  }
  float* out = scratch + (qi * chunks + c) * (hd + 3);
  if (lane == 0) out[0] = part.m, out[1] = part.l, out[2] = part.t;
#pragma unroll
  for (int i = 0; i < per_lane; ++i) {
    const int e = lane + 32 * i;
    if (e < hd) out[3 + e] = acc[i];
  }
}

__global__ void combine_kernel(const float* __restrict__ scratch, int64_t queries, int n_head, int hd, int chunks,
                               float* __restrict__ out, int64_t ldo, float* __restrict__ entropy) {
  const int64_t qi = blockIdx.x;
  const int lane = threadIdx.x;
  softmax_part total;
  float acc[per_lane];
#pragma unroll
  for (int i = 0; i < per_lane; ++i) acc[i] = 0.f;
  for (int c = 0; c < chunks; ++c) {
    const float* p = scratch + (qi * chunks + c) * (hd + 3);
    softmax_part part;
    part.m = p[0], part.l = p[1], part.t = p[2];
    const merge_scales k = softmax_merge(total, part);
#pragma unroll
    for (int i = 0; i < per_lane; ++i) {
      const int e = lane + 32 * i;
      if (e < hd) acc[i] = acc[i] * k.a + (k.b != 0.f ? p[3 + e] * k.b : 0.f);
    }
  }
  const int64_t r = qi / n_head;
  const int h = static_cast<int>(qi % n_head);
  const float inv = total.l > 0 ? 1.f / total.l : 0.f;
#pragma unroll
  for (int i = 0; i < per_lane; ++i) {
    const int e = lane + 32 * i;
    if (e < hd) out[r * ldo + static_cast<int64_t>(h) * hd + e] = acc[i] * inv;
  }
  if (entropy && lane == 0) entropy[qi] = fmaxf(0.f, softmax_entropy(total));  // as the CPU paths clamp rounding below 0
}

}  // namespace

size_t attention_scratch_floats(int64_t rows, int n_head, int head_dim, const attention_plan& p) {
  return static_cast<size_t>(rows) * n_head * p.chunks * (head_dim + 3);
}

void attention(const float* qkv, int64_t ld, float* out, int64_t ldo, int64_t rows, int n_head, int n_head_kv,
               const int32_t* n_keys, const kv_rows& kv, const kv_pool_desc& pool, uint32_t layer, float scale,
               const attention_plan& plan, float* scratch, float* entropy, cudaStream_t s) {
  if (rows <= 0) return;
  const int64_t queries = rows * n_head;
  const dim3 grid(static_cast<unsigned>((queries + warps - 1) / warps), static_cast<unsigned>(plan.chunks));
  partial_kernel<<<grid, 32 * warps, 0, s>>>(qkv, ld, queries, n_head, n_head / n_head_kv, n_keys, kv, pool, layer,
                                             scale, plan.chunk_keys, plan.chunks, scratch);
  combine_kernel<<<static_cast<unsigned>(queries), 32, 0, s>>>(scratch, queries, n_head,
                                                                static_cast<int>(pool.layout.head_dim), plan.chunks,
                                                                out, ldo, entropy);
}

}  // namespace fw::cuda
