#include "runtime/kv/prefix_cache.hpp"

#include <algorithm>

namespace fw {

uint64_t prefix_cache::chain(uint64_t h, std::span<const int32_t> block) const {
  // FNV-1a over the previous key and the block's token ids.
  h ^= 0xcbf29ce484222325ull;
  for (int32_t t : block) {
    auto v = static_cast<uint32_t>(t);
    for (int i = 0; i < 4; ++i, v >>= 8) h = (h ^ (v & 0xff)) * 0x100000001b3ull;
  }
  return h;
}

prefix_cache::match prefix_cache::find(std::span<const int32_t> tokens) const {
  match best;
  uint64_t h = 0;
  for (uint32_t b = 0; (b + 1) * static_cast<size_t>(bt_) <= tokens.size(); ++b) {
    h = chain(h, tokens.subspan(static_cast<size_t>(b) * bt_, bt_));
    const auto [lo, hi] = keys_.equal_range(h);
    const entry* found = nullptr;
    const size_t n = static_cast<size_t>(b + 1) * bt_;
    for (auto it = lo; it != hi && !found; ++it) {
      const entry& e = entries_[it->second.entry];
      if (e.live && it->second.blocks == b + 1 && std::equal(tokens.begin(), tokens.begin() + n, e.tokens.begin()))
        found = &e;
    }
    if (!found) break;
    best = {&found->kv, static_cast<uint32_t>(n)};
  }
  return best;
}

prefix_cache::match prefix_cache::lookup(std::span<const int32_t> tokens, uint64_t tick) {
  ++stats_.queries;
  stats_.query_tokens += tokens.size();
  const match best = find(tokens);
  if (best.tokens > 0) {
    ++stats_.hits;
    stats_.hit_tokens += best.tokens;
    for (auto& e : entries_)
      if (&e.kv == best.kv) e.used = tick;
  }
  return best;
}

void prefix_cache::drop(uint32_t i, std::vector<kv_handle>& out) {
  entry& e = entries_[i];
  for (auto it = keys_.begin(); it != keys_.end();) it = it->second.entry == i ? keys_.erase(it) : std::next(it);
  stats_.blocks -= e.kv.blocks.size();
  --stats_.entries;
  out.push_back(std::move(e.kv));
  e = entry{};
}

std::vector<kv_handle> prefix_cache::insert(std::span<const int32_t> tokens, kv_handle kv, uint64_t tick) {
  std::vector<kv_handle> out;
  const uint32_t n = kv.n_tokens;
  const uint32_t blocks = bt_ ? n / bt_ : 0;
  if (blocks == 0 || n % bt_ != 0 || n > tokens.size() || blocks > max_blocks_ || kv.blocks.size() != blocks) {
    out.push_back(std::move(kv));
    return out;
  }
  // Already covered by an entry (this prompt, or a longer one starting with it): nothing new.
  if (find(tokens.first(n)).tokens == n) {
    out.push_back(std::move(kv));
    return out;
  }
  // Entries that are a strict prefix of this one add nothing once it is in: drop them.
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    const entry& e = entries_[i];
    if (e.live && e.tokens.size() < n && std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin())) drop(i, out);
  }
  // Room: least recently used first.
  while (stats_.blocks + blocks > max_blocks_) {
    uint32_t lru = UINT32_MAX;
    for (uint32_t i = 0; i < entries_.size(); ++i)
      if (entries_[i].live && (lru == UINT32_MAX || entries_[i].used < entries_[lru].used)) lru = i;
    if (lru == UINT32_MAX) break;
    drop(lru, out);
    ++stats_.evictions;
  }
  uint32_t slot = 0;
  while (slot < entries_.size() && entries_[slot].live) ++slot;
  if (slot == entries_.size()) entries_.emplace_back();
  entry& e = entries_[slot];
  e.tokens.assign(tokens.begin(), tokens.begin() + n);
  e.kv = std::move(kv);
  e.used = tick;
  e.live = true;
  uint64_t h = 0;
  for (uint32_t b = 0; b < blocks; ++b) {
    h = chain(h, std::span<const int32_t>(e.tokens).subspan(static_cast<size_t>(b) * bt_, bt_));
    keys_.emplace(h, key_ref{slot, b + 1});
  }
  stats_.blocks += blocks;
  ++stats_.entries;
  return out;
}

std::vector<kv_handle> prefix_cache::evict_all() {
  std::vector<kv_handle> out;
  for (uint32_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].live) drop(i, out);
  entries_.clear();
  keys_.clear();
  return out;
}

}  // namespace fw
