#include "runtime/device/prefill.hpp"

#include <algorithm>

namespace fw {

expected<void> prefill_tokens(backend& b, kv_handle& kv, const int32_t* tokens, size_t n, int32_t start,
                              uint32_t chunk, forward_result& out) {
  forward_batch batch;
  for (size_t off = 0; off < n; off += chunk) {
    const size_t m = std::min<size_t>(chunk, n - off);
    batch.clear();
    batch.add_sequence(&kv, tokens + off, m, start + static_cast<int32_t>(off), false);
    if (auto r = b.forward(batch, out); !r) return r.err();
  }
  return {};
}

}  // namespace fw
