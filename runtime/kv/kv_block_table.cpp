#include "runtime/kv/kv_block_table.hpp"

#include <algorithm>

namespace fw {

kv_block_table::kv_block_table(uint32_t pool_id, uint32_t block_tokens, uint32_t n_blocks)
    : pool_id_(pool_id), block_tokens_(block_tokens), n_blocks_(n_blocks), owner_(n_blocks, 0) {
  free_.reserve(n_blocks);
  for (uint32_t b = n_blocks; b > 0; --b) free_.push_back(b - 1);  // hands out 0, 1, 2, ...
}

std::string kv_block_table::describe(const kv_handle& h) {
  return "kv handle (pool " + std::to_string(h.pool_id) + ", epoch " + std::to_string(h.epoch) + ", " +
         std::to_string(h.blocks.size()) + " blocks)";
}

uint32_t kv_block_table::next_epoch() {
  const uint32_t e = next_epoch_++;
  if (next_epoch_ == 0) next_epoch_ = 1;  // 0 means "never allocated"
  return e;
}

bool kv_block_table::epoch_live(uint32_t epoch) const {
  // Handed out since the last reset; modular so that wrapping the counter is harmless.
  return epoch != 0 && epoch - first_live_epoch_ < next_epoch_ - first_live_epoch_;
}

expected<void> kv_block_table::check(const kv_handle& h) const {
  if (h.pool_id != pool_id_)
    return make_error(errc::invalid_argument, describe(h) + " does not belong to pool " + std::to_string(pool_id_));
  if (!epoch_live(h.epoch))
    return make_error(errc::invalid_argument, describe(h) +
                                                  " is stale: its epoch is not live in this pool (never "
                                                  "allocated here, or the pool was reset)");
  for (uint32_t b : h.blocks) {
    if (b >= n_blocks_)
      return make_error(errc::invalid_argument, describe(h) + " names block " + std::to_string(b) + " of a pool of " +
                                                    std::to_string(n_blocks_));
    if (owner_[b] != h.epoch)
      return make_error(errc::invalid_argument,
                        describe(h) + " is stale: block " + std::to_string(b) + " is " +
                            (owner_[b] == 0 ? std::string("free") : "lent to epoch " + std::to_string(owner_[b])) +
                            " (double release, or use after release)");
  }
  return {};
}

void kv_block_table::take(kv_handle& h, size_t n) {
  h.blocks.reserve(h.blocks.size() + n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = free_.back();
    free_.pop_back();
    owner_[b] = h.epoch;
    h.blocks.push_back(b);
  }
}

std::optional<kv_handle> kv_block_table::allocate(uint32_t n_tokens) {
  const uint32_t need = blocks_for_tokens(n_tokens);
  if (need > free_.size()) return std::nullopt;
  kv_handle h;
  h.pool_id = pool_id_;
  h.epoch = next_epoch();
  take(h, need);
  return h;
}

expected<void> kv_block_table::grow(kv_handle& h, uint32_t n_tokens) {
  const size_t need = blocks_for_tokens(n_tokens);
  if (h.epoch == 0 && h.empty()) {  // default-constructed: becomes a fresh allocation
    if (need > free_.size())
      return make_error(errc::out_of_memory,
                        "kv pool " + std::to_string(pool_id_) + " has " + std::to_string(free_.size()) + " free blocks");
    h.pool_id = pool_id_;
    h.epoch = next_epoch();
    h.n_tokens = 0;
  } else if (auto ok = check(h); !ok) {
    return ok;
  }
  if (need <= h.blocks.size()) return {};
  const size_t extra = need - h.blocks.size();
  if (extra > free_.size())
    return make_error(errc::out_of_memory, "kv pool " + std::to_string(pool_id_) + " needs " + std::to_string(extra) +
                                               " more blocks, has " + std::to_string(free_.size()) + " free");
  take(h, extra);
  return {};
}

expected<void> kv_block_table::truncate(kv_handle& h, uint32_t n_tokens) {
  if (n_tokens > h.n_tokens)
    return make_error(errc::invalid_argument, "cannot truncate " + describe(h) + " of " + std::to_string(h.n_tokens) +
                                                  " tokens to " + std::to_string(n_tokens));
  if (auto ok = check(h); !ok) return ok;
  const size_t keep = blocks_for_tokens(n_tokens);
  while (h.blocks.size() > keep) {
    const uint32_t b = h.blocks.back();
    h.blocks.pop_back();
    if (owner_[b] != h.epoch) continue;  // a duplicated id, already freed above
    owner_[b] = 0;
    free_.push_back(b);
  }
  h.n_tokens = n_tokens;
  return {};
}

expected<void> kv_block_table::release(kv_handle& h) {
  if (h.empty()) {
    h.n_tokens = 0;
    return {};
  }
  if (auto ok = check(h); !ok) return ok;
  for (auto it = h.blocks.rbegin(); it != h.blocks.rend(); ++it) {
    if (owner_[*it] != h.epoch) continue;  // a duplicated id, already freed
    owner_[*it] = 0;
    free_.push_back(*it);
  }
  h.blocks.clear();
  h.n_tokens = 0;
  return {};
}

uint32_t kv_block_table::release_epoch(uint32_t epoch) {
  if (epoch == 0) return 0;
  uint32_t freed = 0;
  for (uint32_t b = 0; b < n_blocks_; ++b) {
    if (owner_[b] != epoch) continue;
    owner_[b] = 0;
    free_.push_back(b);
    ++freed;
  }
  return freed;
}

void kv_block_table::reset() {
  std::fill(owner_.begin(), owner_.end(), 0);
  free_.clear();
  for (uint32_t b = n_blocks_; b > 0; --b) free_.push_back(b - 1);
  first_live_epoch_ = next_epoch_;
}

}  // namespace fw
