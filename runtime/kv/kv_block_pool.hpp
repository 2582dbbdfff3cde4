// kv_block_pool: one device's KV cache, cut into fixed-size blocks and lent out to sequences
// through kv_handle values. Three parts: the book (kv_block_table), the memory (kv_storage:
// host_kv_storage here, device memory later) and the layout math below.
//
// Memory layout (elements of layout.dtype: float32, half, or q8 with each tile's scales after its
// elements, kernels/format/kv_q8.hpp): block after block; inside block b the K tiles of every
// (layer, kv head) then the V tiles, in bytes:
//   k(b, l, h) = data + b * block_bytes + (l * n_head_kv + h) * tile_bytes
//   v(b, l, h) = k(b, l, h) + n_layer * n_head_kv * tile_bytes
// A K tile is [head_dim][block_tokens] (transposed: dimension e of token t at e * block_tokens + t,
// so attention scores 16 keys per SIMD vector), a V tile [block_tokens][head_dim] (a token's values
// contiguous, for the weighted sum). Attention streams whole tiles, and a block is one contiguous
// range for copies and transfer. write_token / read_token hide the K transposition.
//
// Ownership: the pool owns the memory and the book (kv_block_table: free list, epochs, which
// allocation owns each block); the book is a separate, single-threaded class that only the pool
// mutates, under its mutex.
// A handle's owner (one actor at a time) owns the contents of its blocks. Every allocation gets a
// fresh epoch, and each block records the epoch it was lent to, so a stale copy of a handle
// (released already, or from before reset()) is detected and answered with an error value instead
// of corrupting the free list. Running out of blocks is a value (nullopt / false), never a throw.
//
// Thread-safety: allocate, reserve, truncate, release, reset, owns and the counters lock an
// internal mutex and may be called from any thread. set_length and the data accessors take no
// lock: only the handle's owner calls them, for its own blocks. The pool must outlive its handles'
// use; it is neither copyable nor movable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/kv/kv_block_table.hpp"
#include "runtime/kv/kv_handle.hpp"
#include "runtime/kv/kv_storage.hpp"

namespace fw {

class kv_block_pool {
 public:
  /// Maps n_blocks zeroed blocks of layout (memory is committed as blocks are first written). Precondition: layout dimensions are > 0
  /// (asserted); throws std::bad_alloc like any allocation - create() turns both into errors.
  kv_block_pool(uint32_t pool_id, kv_layout layout, uint32_t n_blocks);
  /// A pool over given storage (a device's memory): its n_blocks blocks of layout.block_bytes().
  kv_block_pool(uint32_t pool_id, kv_layout layout, std::unique_ptr<kv_storage> storage);

  /// Checks the layout and size, then constructs; errc::invalid_argument for a zero dimension,
  /// errc::out_of_memory when the memory cannot be had.
  [[nodiscard]] static expected<std::unique_ptr<kv_block_pool>> create(uint32_t pool_id,
                                                                       kv_layout layout,
                                                                       uint32_t n_blocks);

  kv_block_pool(const kv_block_pool&) = delete;
  kv_block_pool& operator=(const kv_block_pool&) = delete;
  ~kv_block_pool();

  /// A pool id not handed out before in this process (1, 2, ...): every pool of every device gets
  /// its own, so a handle can never be taken for one of another pool (a draft model's pool next to
  /// its target's, two devices).
  [[nodiscard]] static uint32_t next_pool_id();

  /// Whole blocks of layout that fit in bytes (e.g. a device's kv_pool_mib).
  [[nodiscard]] static uint32_t blocks_for_bytes(kv_layout layout, size_t bytes);

  // -- allocation (thread-safe) --

  /// A handle with room for n_tokens tokens (ceil(n_tokens / block_tokens) blocks) and length 0;
  /// nullopt when too few blocks are free. n_tokens = 0 gives a valid handle holding no blocks.
  [[nodiscard]] std::optional<kv_handle> allocate(uint32_t n_tokens);

  /// Grows h's capacity to hold n_tokens, keeping its length. A default-constructed handle
  /// (epoch 0) is allocated afresh. false, with h unchanged, when blocks run out or h is not a live
  /// handle of this pool.
  [[nodiscard]] bool reserve(kv_handle& h, uint32_t n_tokens);

  /// Speculative rollback: sets the length to n_tokens (<= current length) and frees the blocks
  /// past it, reserved capacity included. Error (h unchanged) for a stale handle or a longer n.
  expected<void> truncate(kv_handle& h, uint32_t n_tokens);

  /// Frees all of h's blocks; h becomes empty (n_tokens 0, no blocks). Releasing an empty handle
  /// is a no-op. Error (nothing freed, h unchanged) for a stale handle: double release, release
  /// after reset(), another pool's handle, or blocks that the allocation does not own.
  expected<void> release(kv_handle& h);

  /// Frees every block lent to `epoch`, whoever holds the handle: the recovery path when the
  /// owner of a handle died with it (a crashed actor). Returns the number of blocks freed.
  uint32_t release_epoch(uint32_t epoch);

  /// Frees every block and invalidates every handle handed out so far.
  void reset();

  /// Pool id matches, the epoch is live, and every block is currently lent to that epoch.
  [[nodiscard]] bool owns(const kv_handle& h) const;

  [[nodiscard]] uint32_t free_blocks() const;
  [[nodiscard]] uint32_t used_blocks() const;
  [[nodiscard]] uint32_t total_blocks() const { return n_blocks_; }
  /// used / total in [0, 1] (0 for an empty pool).
  [[nodiscard]] double usage() const;

  // -- owner-side operations (no lock: the handle's owner only) --

  /// Sets the number of valid tokens (after writing them). Error when n exceeds capacity(h) or h
  /// belongs to another pool.
  expected<void> set_length(kv_handle& h, uint32_t n_tokens) const;

  /// Tokens h can hold without growing: blocks * block_tokens.
  [[nodiscard]] uint32_t capacity(const kv_handle& h) const;

  /// Copies from's tokens (owned by src, which may be this pool; layouts must match per token,
  /// block_tokens may differ) into to, growing to as needed; to's length becomes from's.
  /// to may be default-constructed. Errors: mismatched layout or stale handle (invalid_argument),
  /// too few free blocks (out_of_memory, to unchanged).
  /// count: copy only from's first min(count, from.n_tokens) tokens (a cached prefix).
  expected<void> copy_tokens(const kv_block_pool& src, const kv_handle& from, kv_handle& to,
                             uint32_t count = UINT32_MAX);

  // -- memory (no lock) --

  /// The K tile [head_dim][block_tokens] / V tile [block_tokens][head_dim] of (block, layer, kv head),
  /// in layout().dtype.
  [[nodiscard]] void* k_data(uint32_t block, uint32_t layer, uint32_t head);
  [[nodiscard]] const void* k_data(uint32_t block, uint32_t layer, uint32_t head) const;
  [[nodiscard]] void* v_data(uint32_t block, uint32_t layer, uint32_t head);
  [[nodiscard]] const void* v_data(uint32_t block, uint32_t layer, uint32_t head) const;
  /// The same tiles as floats: float32 pools only (asserted).
  [[nodiscard]] float* k(uint32_t block, uint32_t layer, uint32_t head);
  [[nodiscard]] const float* k(uint32_t block, uint32_t layer, uint32_t head) const;
  [[nodiscard]] float* v(uint32_t block, uint32_t layer, uint32_t head);
  [[nodiscard]] const float* v(uint32_t block, uint32_t layer, uint32_t head) const;
  /// Stores / loads the head_dim K and V floats of token position pos (< capacity(h)) of handle h
  /// (converted to and from the pool's dtype).
  void write_token(const kv_handle& h, uint32_t pos, uint32_t layer, uint32_t head, const float* k,
                   const float* v);
  void read_token(const kv_handle& h, uint32_t pos, uint32_t layer, uint32_t head, float* k,
                  float* v) const;
  /// The head_dim V floats of token position pos (< capacity(h)) of handle h (contiguous;
  /// float32 pools only).
  [[nodiscard]] float* v_row(const kv_handle& h, uint32_t pos, uint32_t layer, uint32_t head);
  [[nodiscard]] const float* v_row(const kv_handle& h, uint32_t pos, uint32_t layer,
                                   uint32_t head) const;
  /// All bytes of one block (layout.block_bytes()), e.g. for a codec or a device copy.
  [[nodiscard]] std::span<std::byte> block_data(uint32_t block);
  [[nodiscard]] std::span<const std::byte> block_data(uint32_t block) const;

  [[nodiscard]] uint32_t pool_id() const { return pool_id_; }
  /// False when the blocks live in a device's memory: the host accessors above (k_data, k,
  /// write_token, read_token, v_row, block_data) must not be used then; copy_tokens still works.
  [[nodiscard]] bool host_addressable() const { return storage_->host_addressable(); }
  /// Where the blocks live ("host", "cuda:0").
  [[nodiscard]] const char* where() const { return storage_->where(); }
  [[nodiscard]] const kv_layout& layout() const { return layout_; }

 private:


  const uint32_t pool_id_;
  const kv_layout layout_;
  const uint32_t n_blocks_;
  const size_t tile_bytes_;
  const size_t v_offset_;  // bytes from a block's K tiles to its V tiles
  std::unique_ptr<kv_storage> storage_;  // the blocks' memory (host_kv_storage here)

  mutable std::mutex mutex_;
  kv_block_table book_;  // GUARDED_BY(mutex_): free list, epochs, ownership; only this pool mutates it
};

}  // namespace fw
