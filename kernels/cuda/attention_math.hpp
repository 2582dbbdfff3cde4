// attention_math: the arithmetic of split-K ("flash-decoding") attention shared by the CUDA
// kernels and the host tests. A query's keys are cut into chunks; each chunk yields a partial
// state over its scores s_i (max m, sum l = sum e^(s_i - m), entropy term t = sum e^(s_i - m)
// (s_i - m), and the unnormalized weighted sum of values); merge() combines chunks in any order,
// finish() gives the output scale and the attention entropy H = log L - T / L (nats), the same
// quantity kernels/cpu/attention reports. Also the KV pool's tile addressing
// (runtime/kv/kv_block_pool.hpp): K tiles [head_dim][block_tokens], V tiles
// [block_tokens][head_dim], K tiles of every (layer, kv head) then the V tiles, per block.
// Thread-safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cuda/cuda_compat.hpp"

namespace fw::cuda {

/// One chunk's softmax statistics (the values' weighted sum travels beside it).
struct softmax_part {
  float m = -INFINITY;  ///< max score
  float l = 0;          ///< sum of e^(s - m)
  float t = 0;          ///< sum of e^(s - m) (s - m)
};

/// Adds one score to a running part; returns the factor the part's old value sum must be
/// scaled by (the new score's own weight is e^(s - m) after the call: weight_of(p, s)).
FW_HD float softmax_add(softmax_part& p, float s) {
  if (s == -INFINITY) return 1.f;  // weight 0: nothing changes
  if (s <= p.m) {
    const float e = expf(s - p.m);
    p.t += e * (s - p.m);
    p.l += e;
    return 1.f;
  }
  if (p.l == 0) {  // the first score
    p.m = s, p.l = 1.f, p.t = 0.f;
    return 0.f;
  }
  // New max: rescale l and t to it. t' = sum e^(s_i - m') (s_i - m') = f (t + (m - m') l).
  const float f = expf(p.m - s);
  p.t = f * (p.t + (p.m - s) * p.l);
  p.l = f * p.l + 1.f;
  p.m = s;
  return f;
}

/// Merges b into a; returns {scale of a's value sum, scale of b's value sum}.
struct merge_scales {
  float a, b;
};
FW_HD merge_scales softmax_merge(softmax_part& a, const softmax_part& b) {
  if (b.l == 0) return {1.f, 0.f};
  if (a.l == 0) {
    a = b;
    return {0.f, 1.f};
  }
  const float m = a.m > b.m ? a.m : b.m;
  const float fa = expf(a.m - m), fb = expf(b.m - m);
  a.t = fa * (a.t + (a.m - m) * a.l) + fb * (b.t + (b.m - m) * b.l);
  a.l = fa * a.l + fb * b.l;
  a.m = m;
  return {fa, fb};
}

/// The attention entropy (nats) of a whole query's part.
FW_HD float softmax_entropy(const softmax_part& p) { return p.l > 0 ? logf(p.l) - p.t / p.l : 0.f; }

/// Split-K attention plan: how many key chunks each query's keys are cut into.
struct attention_plan {
  int chunks = 1;
  int chunk_keys = 32;  ///< a multiple of 32; chunks * chunk_keys >= the keys planned for
};

/// The plan for rows x n_head queries of at most max_keys keys: about 2,048 (query, chunk) warps
/// in all (enough to fill an H200's 132 multiprocessors), at least 64 keys per chunk; a prefill
/// of many rows gets one chunk per query.
inline attention_plan plan_attention(int64_t rows, int n_head, int max_keys) {
  attention_plan p;
  if (max_keys < 1) max_keys = 1;
  const int64_t queries = rows * n_head > 0 ? rows * n_head : 1;
  const int64_t want = queries >= 2048 ? 1 : (2048 + queries - 1) / queries;
  const int64_t most = (max_keys + 63) / 64;
  p.chunks = static_cast<int>(want < most ? want : most);
  if (p.chunks < 1) p.chunks = 1;
  const int per = (max_keys + p.chunks - 1) / p.chunks;
  p.chunk_keys = (per + 31) / 32 * 32;
  p.chunks = (max_keys + p.chunk_keys - 1) / p.chunk_keys;
  return p;
}

/// The KV pool's addressing, in elements of its dtype.
struct kv_tiles_layout {
  uint32_t n_layer, n_head_kv, head_dim, block_tokens;
  FW_HD int64_t tile_elems() const { return int64_t{block_tokens} * head_dim; }
  FW_HD int64_t block_elems() const { return 2 * int64_t{n_layer} * n_head_kv * tile_elems(); }
  /// Element e of key t (t < block_tokens) of (block, layer, head).
  FW_HD int64_t k_at(uint32_t block, uint32_t layer, uint32_t head, uint32_t t, uint32_t e) const {
    return block * block_elems() + (int64_t{layer} * n_head_kv + head) * tile_elems() + int64_t{e} * block_tokens + t;
  }
  FW_HD int64_t v_at(uint32_t block, uint32_t layer, uint32_t head, uint32_t t, uint32_t e) const {
    return block * block_elems() + (int64_t{n_layer} * n_head_kv + int64_t{layer} * n_head_kv + head) * tile_elems() +
           int64_t{t} * head_dim + e;
  }
};

}  // namespace fw::cuda
