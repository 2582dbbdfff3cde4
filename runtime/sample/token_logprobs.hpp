// token_logprobs: the log-probability of a chosen token and the most likely alternatives, from
// the model's raw logits of that position (log-softmax before temperature, penalties or
// truncation: the model's own distribution, as vLLM's default "raw" logprobs and OpenAI's).
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fw {

struct token_logprobs {
  int32_t token = -1;              ///< the scored token
  float logprob = 0;               ///< log p(token)
  int32_t rank = 0;                ///< 1: the most likely token (ties: the lower id first)
  std::vector<int32_t> top_ids;    ///< the n_top most likely tokens, most likely first (ties: lower id)
  std::vector<float> top_logprobs; ///< their log-probabilities
};

/// logits: one position's n_vocab logits; token: the chosen id (in range); n_top >= 0.
[[nodiscard]] token_logprobs logprobs_of(std::span<const float> logits, int32_t token, int n_top);

}  // namespace fw
