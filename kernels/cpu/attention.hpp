// Attention of a set of queries over one KV head's cache, read in place from the KV pool's tiles.
//
// The cache of one (sequence, layer, kv head) is a list of tiles of block_tokens tokens each:
//   K tile: [head_dim][block_tokens] (transposed: one dimension of 16 consecutive keys is one
//           SIMD vector, so scores for 16 keys are head_dim multiply-adds with no horizontal sums)
//   V tile: [block_tokens][head_dim] (a token's values contiguous, for the weighted sum)
// Every query sees a prefix of the keys (causal masking: n_keys = its position + 1), so the
// queries of one sequence that share a KV head (all rows of a prefill chunk times the GQA heads)
// are answered in one call, each loaded key tile serving all of them.
//
// Paths: scalar reference (two passes: scores, softmax, weighted sum), AVX-512 (one pass with
// an online softmax over 16-key chunks, 4 queries per register tile; used when head_dim is 32, 64, 96
// or 128 and block_tokens a multiple of 16) and AVX2 (blocks of up to 4 queries: a scores pass, a
// softmax pass and a values pass over 8-key vectors; head_dim 32, 64, 96 or 128, block_tokens a
// multiple of 8); otherwise the reference runs. Thread-safety: pure
// functions; callers split work by (sequence, kv head, query range).
#pragma once

#include <cstdint>

#include "kernels/cpu/cpu_features.hpp"

namespace fw::cpu {

/// Element type of the tiles: float32, IEEE half, or q8 (int8, each tile followed by its
/// block_tokens float scales, kernels/format/kv_q8.hpp; element e of token t is scale[t] * q).
enum class kv_elem : uint8_t { f32, f16, q8 };

/// One KV head's cache of one sequence, in tiles (see the layout above), converted to float as
/// they are loaded. q8: a score is q . k8[:, t] times K's scale[t]; a value row's scale[t] is
/// folded into the query's probability of key t.
struct kv_tiles {
  const void* const* k = nullptr;  ///< n_tiles K tiles [head_dim][block_tokens]
  const void* const* v = nullptr;  ///< n_tiles V tiles [block_tokens][head_dim]
  int n_tiles = 0;
  int block_tokens = 0;
  int head_dim = 0;
  kv_elem elem = kv_elem::f32;
};

/// Queries answered together: query i (head_dim floats at q[i]) attends to keys [0, n_keys[i])
/// (1 <= n_keys[i] <= n_tiles * block_tokens) and writes head_dim floats to out[i].
struct attention_queries {
  int n_q = 0;
  const float* const* q = nullptr;
  float* const* out = nullptr;
  const int32_t* n_keys = nullptr;
  /// Optional (nullptr = skip): entropy in nats of each query's attention distribution.
  float* entropy = nullptr;
};

/// out = softmax(scale * q . K) . V for every query.
using attention_fn = void (*)(const kv_tiles& kv, const attention_queries& qs, float scale);

/// The best path at or below max_level for this shape (the reference when no SIMD path fits).
attention_fn select_attention(simd_level max_level, int head_dim, int block_tokens);

namespace ref {
void attention(const kv_tiles& kv, const attention_queries& qs, float scale);
}
namespace avx2 {
/// Blocks of up to 4 queries in three passes (attention_avx2.cpp). Requires head_dim in {32, 64, 96, 128} and
/// block_tokens % 8 == 0.
void attention(const kv_tiles& kv, const attention_queries& qs, float scale);
bool supports(int head_dim, int block_tokens);
}  // namespace avx2
namespace avx512 {
/// Requires head_dim in {32, 64, 96, 128} and block_tokens % 16 == 0.
void attention(const kv_tiles& kv, const attention_queries& qs, float scale);
bool supports(int head_dim, int block_tokens);
}  // namespace avx512

}  // namespace fw::cpu
