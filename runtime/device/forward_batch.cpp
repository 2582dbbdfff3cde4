#include "runtime/device/forward_batch.hpp"

#include <algorithm>
#include <string>

#include "runtime/kv/kv_block_pool.hpp"

namespace fw {

size_t forward_batch::logit_rows() const {
  size_t n = 0;
  for (uint8_t w : want_logits) n += w != 0;
  return n;
}

void forward_batch::add(int32_t token, int32_t pos, uint32_t seq_index, bool logits) {
  tokens.push_back(token);
  positions.push_back(pos);
  seq.push_back(seq_index);
  want_logits.push_back(logits ? 1 : 0);
}

uint32_t forward_batch::add_sequence(kv_handle* handle, const int32_t* toks, size_t n,
                                     int32_t start_pos, bool all_logits) {
  const auto index = static_cast<uint32_t>(kv.size());
  kv.push_back(handle);
  for (size_t i = 0; i < n; ++i)
    add(toks[i], start_pos + static_cast<int32_t>(i), index, all_logits || i + 1 == n);
  return index;
}

expected<std::vector<int32_t>> reserve_batch(const forward_batch& b, kv_block_pool& pool, uint32_t n_vocab) {
  std::vector<int32_t> end_pos(b.kv.size(), 0);
  for (size_t r = 0; r < b.rows(); ++r) {
    if (b.tokens[r] < 0 || static_cast<uint32_t>(b.tokens[r]) >= n_vocab)
      return make_error(errc::invalid_argument, "token id " + std::to_string(b.tokens[r]) + " is outside the vocabulary");
    if (b.seq[r] >= b.kv.size()) return make_error(errc::internal, "batch row names a missing sequence");
    end_pos[b.seq[r]] = std::max(end_pos[b.seq[r]], b.positions[r] + 1);
  }
  for (size_t s = 0; s < b.kv.size(); ++s) {
    // Callers that planned the step (the batch decoder) reserved already: only the lock-free
    // capacity check then; the book is consulted when the handle must grow.
    if (pool.capacity(*b.kv[s]) < static_cast<uint32_t>(end_pos[s]) &&
        !pool.reserve(*b.kv[s], static_cast<uint32_t>(end_pos[s])))
      return make_error(errc::out_of_memory, "KV cache pool exhausted (" + std::to_string(pool.free_blocks()) + " free blocks)");
  }
  return end_pos;
}

expected<void> commit_batch(const forward_batch& b, kv_block_pool& pool, const std::vector<int32_t>& end_pos) {
  for (size_t s = 0; s < b.kv.size(); ++s)
    if (b.kv[s]->n_tokens < static_cast<uint32_t>(end_pos[s]))
      if (auto ok = pool.set_length(*b.kv[s], static_cast<uint32_t>(end_pos[s])); !ok) return ok;
  return {};
}

void forward_batch::clear() {
  tokens.clear();
  positions.clear();
  seq.clear();
  want_logits.clear();
  kv.clear();
}

}  // namespace fw
