#include "runtime/spec/acceptance_table.hpp"

#include <utility>

namespace fw {

acceptance_table::acceptance_table(std::vector<float> prior, float prior_weight)
    : prior_(std::move(prior)), tried_(prior_.size()), accepted_(prior_.size()), weight_(prior_weight) {
  if (prior_.empty()) prior_ = {0.5f}, tried_ = {0.0f}, accepted_ = {0.0f};
}

float acceptance_table::estimate(size_t bucket) const {
  const size_t i = slot(bucket);
  return (accepted_[i] + weight_ * prior_[i]) / (tried_[i] + weight_);
}

void acceptance_table::record(size_t bucket, bool accepted) {
  const size_t i = slot(bucket);
  tried_[i] += 1;
  if (accepted) accepted_[i] += 1;
}

void acceptance_table::record_verdicts(std::span<const int32_t> history, size_t proposed_at,
                                       std::span<const int32_t> tokens, std::span<const size_t> buckets) {
  const size_t added = history.size() > proposed_at ? history.size() - proposed_at : 0;
  for (size_t i = 0; i < tokens.size() && i < buckets.size() && i < added; ++i) {
    const bool ok = history[proposed_at + i] == tokens[i];
    record(buckets[i], ok);
    if (!ok) break;
  }
}

}  // namespace fw
