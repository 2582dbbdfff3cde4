// admission: the checks every request passes before it may run, in one place for the actor
// runtime and the single-sequence generator: a non-empty prompt of in-vocabulary tokens that
// fits the context window with room for its max_tokens. Pure code. Thread-safety: functions.
#pragma once

#include <cstdint>
#include <span>

#include "runtime/base/expected.hpp"

namespace fw {

/// The token budget of a request (tokens it may generate), or why it cannot run:
/// errc::invalid_argument (empty prompt, token outside [0, n_vocab), max_tokens = 0 when
/// `allow_zero_budget` is false) or errc::context_overflow (prompt, or prompt + max_tokens,
/// beyond n_ctx). max_tokens < 0: as many as the context leaves.
expected<uint32_t> admit_request(std::span<const int32_t> prompt, uint32_t n_vocab, uint32_t n_ctx, int32_t max_tokens,
                                 bool allow_zero_budget = false);

}  // namespace fw
