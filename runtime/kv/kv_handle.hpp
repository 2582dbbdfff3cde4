// kv_layout and kv_handle: the value types of the KV cache.
// kv_layout describes the shape of one block; kv_handle names one sequence's blocks in one pool.
// A handle is a small copyable value sent in messages (no pointers): the pool owns the memory,
// exactly one actor owns a handle at a time and sending it transfers ownership. Its epoch is the
// allocation's generation in that pool; the pool uses it to detect stale copies (after a release,
// or after the pool was reset).
// Thread-safety: plain value types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fw {

/// Element type of the cached K and V values: float32, IEEE half (half the memory and the
/// bandwidth attention needs; values rounded to 11 significant bits, as llama.cpp's default cache),
/// or q8: int8 with one float scale per token, head and tile (max |x| / 127, round to nearest;
/// llama.cpp users know it as -ctk q8_0 -ctv q8_0): head_dim + 4 bytes per token and head for K
/// and for V, 0.53 of f16 at head_dim 64.
enum class kv_dtype : uint8_t { f32, f16, q8 };

/// Shape of the KV cache kept in one pool. A block holds block_tokens tokens of every layer and
/// KV head, for K and for V, as dtype. A q8 tile is its block_tokens x head_dim int8 elements
/// (the same arrangement as the other types) followed by block_tokens float scales (token t's at
/// index t), so a tile stays one contiguous range.
struct kv_layout {
  uint32_t n_layer = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim = 0;
  uint32_t block_tokens = 16;
  kv_dtype dtype = kv_dtype::f32;

  [[nodiscard]] size_t elem_bytes() const { return dtype == kv_dtype::f32 ? 4 : dtype == kv_dtype::f16 ? 2 : 1; }
  /// Elements of one block_tokens x head_dim tile (one layer, one head, K or V).
  [[nodiscard]] size_t tile_elems() const { return size_t{block_tokens} * head_dim; }
  /// Bytes of one tile: its elements, and for q8 its block_tokens float scales after them.
  [[nodiscard]] size_t tile_bytes() const {
    return tile_elems() * elem_bytes() + (dtype == kv_dtype::q8 ? size_t{block_tokens} * sizeof(float) : 0);
  }
  /// Elements of one block: K and V tiles of every layer and head.
  [[nodiscard]] size_t block_elems() const {
    return 2 * size_t{n_layer} * n_head_kv * tile_elems();
  }
  [[nodiscard]] size_t block_bytes() const { return 2 * size_t{n_layer} * n_head_kv * tile_bytes(); }
  /// Blocks needed to hold n tokens.
  [[nodiscard]] uint32_t blocks_for_tokens(uint32_t n) const {
    return static_cast<uint32_t>((uint64_t{n} + block_tokens - 1) / block_tokens);
  }
  /// Same per-token shape (block_tokens and dtype may differ): tokens can be copied between the two.
  [[nodiscard]] bool same_token_shape(const kv_layout& o) const {
    return n_layer == o.n_layer && n_head_kv == o.n_head_kv && head_dim == o.head_dim;
  }
  bool operator==(const kv_layout&) const = default;
};

/// One sequence's KV cache in one pool: the pool, the allocation generation, the token count and
/// the block ids in token order (token t lives in blocks[t / block_tokens]).
struct kv_handle {
  uint32_t pool_id = 0;   ///< the owning pool (and so device)
  uint32_t epoch = 0;     ///< allocation generation in that pool; 0: never allocated
  uint32_t n_tokens = 0;  ///< tokens written (<= blocks.size() * block_tokens)
  std::vector<uint32_t> blocks;

  /// Holds no blocks (default constructed, allocate(0), or released).
  [[nodiscard]] bool empty() const { return blocks.empty(); }
  bool operator==(const kv_handle&) const = default;
};

}  // namespace fw
