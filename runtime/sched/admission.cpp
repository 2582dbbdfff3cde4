#include "runtime/sched/admission.hpp"

#include <string>

namespace fw {

expected<uint32_t> admit_request(std::span<const int32_t> prompt, uint32_t n_vocab, uint32_t n_ctx, int32_t max_tokens,
                                 bool allow_zero_budget) {
  const auto n = static_cast<uint32_t>(prompt.size());
  if (n == 0) return make_error(errc::invalid_argument, "the prompt is empty");
  for (int32_t t : prompt)
    if (t < 0 || static_cast<uint32_t>(t) >= n_vocab)
      return make_error(errc::invalid_argument, "prompt token " + std::to_string(t) + " is outside the vocabulary");
  if (n >= n_ctx)
    return make_error(errc::context_overflow, "prompt of " + std::to_string(n) +
                      " tokens does not fit the context window of " + std::to_string(n_ctx) + " tokens");
  uint32_t budget = n_ctx - n;
  if (max_tokens >= 0) {
    if (static_cast<uint32_t>(max_tokens) > budget)
      return make_error(errc::context_overflow, "prompt (" + std::to_string(n) + " tokens) + max_tokens (" +
                        std::to_string(max_tokens) + ") exceeds the context window of " + std::to_string(n_ctx) + " tokens");
    budget = static_cast<uint32_t>(max_tokens);
  }
  if (budget == 0 && !allow_zero_budget)
    return make_error(errc::invalid_argument, "max_tokens is 0: nothing to generate");
  return budget;
}

}  // namespace fw
