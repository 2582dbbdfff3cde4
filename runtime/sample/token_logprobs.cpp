#include "runtime/sample/token_logprobs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace fw {

token_logprobs logprobs_of(std::span<const float> logits, int32_t token, int n_top) {
  token_logprobs out;
  if (logits.empty()) return out;
  float mx = -std::numeric_limits<float>::infinity();
  for (float v : logits) mx = std::max(mx, v);
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - mx);
  const double log_z = static_cast<double>(mx) + std::log(sum);
  const float lt = logits[static_cast<size_t>(token)];
  out.token = token;
  out.logprob = static_cast<float>(static_cast<double>(lt) - log_z);
  out.rank = 1;
  for (size_t i = 0; i < logits.size(); ++i)
    out.rank += logits[i] > lt || (logits[i] == lt && static_cast<int32_t>(i) < token);
  const size_t n = std::min(static_cast<size_t>(std::max(n_top, 0)), logits.size());
  if (n == 0) return out;
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  });
  for (size_t i = 0; i < n; ++i) {
    out.top_ids.push_back(ids[i]);
    out.top_logprobs.push_back(static_cast<float>(static_cast<double>(logits[static_cast<size_t>(ids[i])]) - log_z));
  }
  return out;
}

}  // namespace fw
