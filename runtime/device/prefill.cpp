#include "runtime/device/prefill.hpp"

#include <algorithm>

namespace fw {

expected<void> prefill_tokens(backend& b, kv_handle& kv, const int32_t* tokens, size_t n, int32_t start,
                              uint32_t chunk, forward_result& out) {
  const prefill_chunking fixed{[chunk](int32_t, size_t) { return chunk; }, {}};
  return prefill_tokens(b, kv, tokens, n, start, fixed, out);
}

expected<void> prefill_tokens(backend& b, kv_handle& kv, const int32_t* tokens, size_t n, int32_t start,
                              const prefill_chunking& chunking, forward_result& out, uint32_t* chunks) {
  forward_batch batch;
  for (size_t off = 0; off < n;) {
    const int32_t pos = start + static_cast<int32_t>(off);
    const size_t m = std::min<size_t>(std::max<uint32_t>(1, chunking.size(pos, n - off)), n - off);
    batch.clear();
    batch.add_sequence(&kv, tokens + off, m, pos, static_cast<bool>(chunking.logits));
    if (auto r = b.forward(batch, out); !r) return r.err();
    if (chunks) ++*chunks;
    if (chunking.ran) chunking.ran(pos, static_cast<uint32_t>(m), out.compute_s);
    if (chunking.logits) chunking.logits(off, m, out);
    off += m;
  }
  return {};
}

}  // namespace fw
