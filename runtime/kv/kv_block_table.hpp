// kv_block_table: the book of one KV pool, apart from its memory: which blocks are free, which
// allocation (epoch) each lent block belongs to, and the epochs handed out since the last reset.
// It checks every handle it is shown (pool id, live epoch, every block lent to that epoch), so a
// stale copy (after a release, after reset) or another pool's handle is an error value, never a
// corrupted free list. Growth, truncation and release edit the handle and the book together.
// Thread-safety: none; exactly one owner mutates it (kv_block_pool, under its mutex).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/kv/kv_handle.hpp"

namespace fw {

class kv_block_table {
 public:
  kv_block_table(uint32_t pool_id, uint32_t block_tokens, uint32_t n_blocks);

  /// A handle with room for n_tokens tokens and length 0; nullopt when too few blocks are free.
  [[nodiscard]] std::optional<kv_handle> allocate(uint32_t n_tokens);
  /// Grows h's capacity to n_tokens (a default-constructed handle becomes a fresh allocation).
  /// errc::out_of_memory (h unchanged) when blocks run out; errc::invalid_argument for a handle
  /// that is not live here.
  expected<void> grow(kv_handle& h, uint32_t n_tokens);
  /// Sets h's length to n_tokens (<= its length) and frees the blocks past it.
  expected<void> truncate(kv_handle& h, uint32_t n_tokens);
  /// Frees all of h's blocks; h becomes empty. An empty handle is a no-op.
  expected<void> release(kv_handle& h);
  /// Frees every block lent to epoch (its holder died); the number freed.
  uint32_t release_epoch(uint32_t epoch);
  /// Frees every block and makes every epoch handed out so far stale.
  void reset();

  /// Error unless h is live here: this pool's id, a live epoch, and every block lent to it.
  [[nodiscard]] expected<void> check(const kv_handle& h) const;

  [[nodiscard]] uint32_t free_blocks() const { return static_cast<uint32_t>(free_.size()); }
  [[nodiscard]] uint32_t total_blocks() const { return n_blocks_; }
  [[nodiscard]] uint32_t pool_id() const { return pool_id_; }
  [[nodiscard]] uint32_t blocks_for_tokens(uint32_t n) const {
    return static_cast<uint32_t>((uint64_t{n} + block_tokens_ - 1) / block_tokens_);
  }

  /// "kv handle (pool 3, epoch 7, 2 blocks)" for messages.
  [[nodiscard]] static std::string describe(const kv_handle& h);

 private:
  uint32_t next_epoch();
  bool epoch_live(uint32_t epoch) const;
  void take(kv_handle& h, size_t n);  ///< moves n free blocks to h (caller checked there are n)

  uint32_t pool_id_;
  uint32_t block_tokens_;
  uint32_t n_blocks_;
  std::vector<uint32_t> owner_;  ///< epoch lent each block, 0 when free
  std::vector<uint32_t> free_;   ///< free block ids, next one at the back
  uint32_t next_epoch_ = 1;
  uint32_t first_live_epoch_ = 1;  ///< epochs before it died in reset()
};

}  // namespace fw
