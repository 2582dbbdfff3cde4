// prefill_tokens: runs a prompt span through a backend in chunks of at most `chunk` rows,
// appending to a sequence's KV handle. What the prefill actor, the generator and model drafts
// (catching up on history) do before decoding. Thread-safety: as backend::forward.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/base/expected.hpp"
#include "runtime/device/backend.hpp"

namespace fw {

/// Writes tokens[0, n) at positions start.. into kv. `out` gets the last chunk's result: the
/// last row's logits and, where the backend measures it, its attention entropy.
expected<void> prefill_tokens(backend& b, kv_handle& kv, const int32_t* tokens, size_t n, int32_t start,
                              uint32_t chunk, forward_result& out);

}  // namespace fw
