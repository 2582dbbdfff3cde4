#include "runtime/device/forward_batch.hpp"

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

void forward_batch::clear() {
  tokens.clear();
  positions.clear();
  seq.clear();
  want_logits.clear();
  kv.clear();
}

}  // namespace fw
