// prefill_tokens: runs a prompt span through a backend in chunks of at most `chunk` rows,
// appending to a sequence's KV handle. What the prefill actor, the generator and model drafts
// (catching up on history) do before decoding. Thread-safety: as backend::forward.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "runtime/base/expected.hpp"
#include "runtime/device/backend.hpp"

namespace fw {

/// Writes tokens[0, n) at positions start.. into kv. `out` gets the last chunk's result: the
/// last row's logits and, where the backend measures it, its attention entropy.
expected<void> prefill_tokens(backend& b, kv_handle& kv, const int32_t* tokens, size_t n, int32_t start,
                              uint32_t chunk, forward_result& out);

/// Chunks sized as the prompt goes: `size(position, left)` gives the next chunk's rows (at least
/// 1 is taken), `ran(position, rows, compute_s)` hears each chunk's compute time (may be empty).
struct prefill_chunking {
  std::function<uint32_t(int32_t position, size_t left)> size;
  std::function<void(int32_t position, uint32_t rows, double compute_s)> ran;
  /// When set, every row's logits are computed (not only the last row's) and handed over after
  /// each chunk: `first` is the chunk's first row (an index into tokens), `rows` its rows in
  /// result's logits (prompt scoring).
  std::function<void(size_t first, size_t rows, const forward_result& result)> logits;
};
/// As above, chunk by chunk as `chunking` says; `chunks` (may be null) counts the forwards.
expected<void> prefill_tokens(backend& b, kv_handle& kv, const int32_t* tokens, size_t n, int32_t start,
                              const prefill_chunking& chunking, forward_result& out, uint32_t* chunks = nullptr);

}  // namespace fw
