// cuda_kernels: the launch functions of kernels/cuda, one op per .cu file, callable from plain
// C++ (the CUDA backend in runtime/device/cuda). Every pointer is device memory; every launch is
// asynchronous on the given stream and reports a bad launch through the stream's next
// synchronization (the backend checks cudaGetLastError after each forward). Layout conventions
// are the CPU backend's: activations are float rows `ld` floats apart, K/V live in the KV pool's
// paged tiles (attention_math.hpp), and a row's sequence is found through `row_blocks`: the
// offset of its sequence's block ids in `blocks`.
// Thread-safety: launches on one stream are ordered; buffers belong to the caller.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/cuda/attention_math.hpp"
#include "kernels/cuda/q16_act.hpp"
#include "kernels/cuda/q8_act.hpp"
#include "kernels/cuda/w8_act.hpp"
#include "kernels/cuda/weight_chunk.hpp"

namespace fw::cuda {

/// A weight matrix on the device: n rows (output channels) of k elements, row_bytes apart.
struct weight_desc {
  wfmt fmt = wfmt::f32;
  const uint8_t* data = nullptr;
  int64_t row_bytes = 0;
  int64_t n = 0;
  int64_t k = 0;
  float act_scale = 0.f;  ///< fw_w8a8: the static activation scale from calibration (0: each group's own)
};

/// The KV pool's memory: base of block 0, its tiles' layout, f16 or f32 elements.
struct kv_pool_desc {
  void* base = nullptr;
  kv_tiles_layout layout{};
  bool f16 = false;
};

/// Where each row's sequence keeps its KV: row r's block ids start at blocks + row_blocks[r].
struct kv_rows {
  const int32_t* positions;   ///< per row
  const int32_t* row_blocks;  ///< per row: offset into blocks
  const uint32_t* blocks;
};

/// Formats whose products quantize their activations first when given scratch (integer products).
inline bool integer_act_format(wfmt f) { return int8_act_format(f) || w8_act_format(f) || int16_act_format(f); }
/// Bytes of the activation scratch a product of m rows of k takes in format f (0: none).
inline int64_t act_scratch_bytes(wfmt f, int64_t m, int64_t k) {
  return int8_act_format(f)    ? q8_act_bytes(m, k)
         : w8_act_format(f)    ? w8_act_bytes(m, k)
         : int16_act_format(f) ? q16_act_bytes(m, k)
                               : 0;
}

/// y[r][0, n) = x[r] . w^T for r < m; rows ldx / ldy floats apart (x rows 16-byte aligned).
/// act_scratch (16-byte aligned, act_scratch_bytes(w.fmt, m, w.k) bytes; may be null): Q4_0 /
/// Q4_1 / Q8_0 products then quantize x to int8 blocks there first (q8_act.hpp), W8A8 products
/// to int8 groups (w8_act.hpp; w.act_scale), W4A16 products to int16 rows (q16_act.hpp), and use
/// integer dot products, the CPU's semantics (from mma_min_rows rows on the int8 ones run on the
/// tensor cores, mma_frag.hpp); without it, and for the float formats, x stays f32.
/// false (nothing launched) for a misaligned x or scratch, or a k that is not a multiple of 32.
bool matmul(const weight_desc& w, const float* x, int64_t ldx, int64_t m, float* y, int64_t ldy, cudaStream_t s,
            void* act_scratch = nullptr);

/// x[r] = the embedding row of tokens[r] (n_embd = width), decoded to floats.
void embed(const weight_desc& table, const int32_t* tokens, int64_t rows, float* x, cudaStream_t s);

/// For each row r and segment h < segments: y[r][h w, (h + 1) w) = rms_norm(x[r][same]) * weight
/// (w = width; weight has width values). y may alias x.
void rms_norm(const float* x, int64_t ldx, const float* weight, float* y, int64_t ldy, int64_t width,
              int64_t rows, int64_t segments, float eps, cudaStream_t s);

/// y[i] += x[i] for i < n.
void add(float* y, const float* x, int64_t n, cudaStream_t s);
/// y[r][i] += bias[i] for i < width, r < rows.
void add_bias(float* y, int64_t ldy, const float* bias, int64_t width, int64_t rows, cudaStream_t s);
/// gate = silu(gate) * up, with gate at gu[r][0, ff) and up at gu[r][ff, 2 ff).
void silu_mul(float* gu, int64_t ld, int64_t ff, int64_t rows, cudaStream_t s);
/// y[i] = x[index[i]] (rows of width floats; x rows ldx apart, y dense).
void gather_rows(const float* x, int64_t ldx, const int32_t* index, int64_t n, int64_t width, float* y,
                 cudaStream_t s);

/// Rotates q (n_head heads at qkv[r][0]) and k (n_head_kv heads right after q) of each row by
/// its table cos_sin[r][0, n_rot) (pairs cos, sin as kernels/cpu rope_cos_sin makes them).
void rope(float* qkv, int64_t ld, int64_t rows, int n_head, int n_head_kv, int head_dim, int n_rot,
          const float* cos_sin, bool neox, cudaStream_t s);

/// Stores each row's k (at qkv[r][k_off]) and v (at qkv[r][v_off]) of every kv head into the
/// pool at the row's position.
void store_kv(const float* qkv, int64_t ld, int64_t k_off, int64_t v_off, int64_t rows, const kv_rows& kv,
              const kv_pool_desc& pool, uint32_t layer, cudaStream_t s);

/// Floats of scratch attention() needs for a plan.
size_t attention_scratch_floats(int64_t rows, int n_head, int head_dim, const attention_plan& p);

/// out[r][h hd, (h + 1) hd) = softmax(q . K^T * scale) V over the first n_keys[r] keys of the
/// row's sequence, for every query head h (kv head h / (n_head / n_head_kv)). entropy (rows x
/// n_head, may be null): each query's attention entropy in nats.
void attention(const float* qkv, int64_t ld, float* out, int64_t ldo, int64_t rows, int n_head, int n_head_kv,
               const int32_t* n_keys, const kv_rows& kv, const kv_pool_desc& pool, uint32_t layer, float scale,
               const attention_plan& plan, float* scratch, float* entropy, cudaStream_t s);

}  // namespace fw::cuda
