// prefix_cache: KV blocks of earlier prompts, kept for reuse by later requests that start with the
// same tokens (a chat's next turn re-sends the whole conversation). Pure bookkeeping over
// kv_handle values: it owns the handles it is given and hands back the ones it evicts; the caller
// (the pool's one owner, the scheduler) copies a hit's tokens into the new request's own blocks,
// so every block keeps exactly one owner and no sequence ever writes into a cached block.
//
// Keys: block i of an entry is keyed by a hash chained over the tokens of blocks 0..i, so a
// lookup walks the prompt block by block and stops at the first unknown key; a hit is confirmed
// token by token (hash collisions never give wrong KV). Only whole blocks are cached and matched.
// Eviction: least recently used first, when the cache holds more than max_blocks, or all at once
// when the caller needs the memory (evict_all).
// Thread-safety: none; one owner (an actor) at a time. No clocks: callers pass a tick.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "runtime/kv/kv_handle.hpp"

namespace fw {

struct prefix_cache_stats {
  uint64_t queries = 0;     ///< lookups
  uint64_t hits = 0;        ///< lookups that matched at least one block
  uint64_t hit_tokens = 0;  ///< tokens served from the cache (not recomputed)
  uint64_t query_tokens = 0;  ///< tokens looked up (hit_tokens / query_tokens: reuse rate)
  uint64_t evictions = 0;
  uint64_t blocks = 0;  ///< blocks held now
  uint64_t entries = 0;
};

class prefix_cache {
 public:
  /// block_tokens: the pool's tokens per block; max_blocks: the most blocks held (0: none cached).
  prefix_cache(uint32_t block_tokens, uint32_t max_blocks) : bt_(block_tokens), max_blocks_(max_blocks) {}

  struct match {
    const kv_handle* kv = nullptr;  ///< the entry to copy from (valid until the next insert/evict)
    uint32_t tokens = 0;            ///< a multiple of block_tokens; 0: miss
  };
  /// The longest cached block-aligned prefix of tokens. Counts a query (and a hit).
  match lookup(std::span<const int32_t> tokens, uint64_t tick);
  /// The same without counting or touching anything.
  [[nodiscard]] match find(std::span<const int32_t> tokens) const;

  /// Takes kv, which holds the first kv.n_tokens of tokens (a multiple of block_tokens), as an
  /// entry. Returns the handles the caller must release: kv itself when it adds nothing (already
  /// cached, empty, or larger than max_blocks), and the least recently used entries evicted to
  /// make room.
  [[nodiscard]] std::vector<kv_handle> insert(std::span<const int32_t> tokens, kv_handle kv, uint64_t tick);
  /// Every entry's handle, for the caller to release (memory pressure, shutdown).
  [[nodiscard]] std::vector<kv_handle> evict_all();

  [[nodiscard]] const prefix_cache_stats& stats() const { return stats_; }
  [[nodiscard]] uint32_t block_tokens() const { return bt_; }

 private:
  struct entry {
    std::vector<int32_t> tokens;
    kv_handle kv;
    uint64_t used = 0;
    bool live = false;
  };
  struct key_ref {
    uint32_t entry;
    uint32_t blocks;  ///< this key covers the entry's first `blocks` blocks
  };
  uint64_t chain(uint64_t h, std::span<const int32_t> block) const;
  void drop(uint32_t e, std::vector<kv_handle>& out);

  uint32_t bt_;
  uint32_t max_blocks_;
  std::vector<entry> entries_;
  std::unordered_multimap<uint64_t, key_ref> keys_;
  prefix_cache_stats stats_;
};

}  // namespace fw
