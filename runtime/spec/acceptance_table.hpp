// acceptance_table: a drafter's running estimate of how often the target accepts its tokens, per
// bucket of some signal the drafter knows before verification (an n-gram's agreeing-context
// length, a model draft's own top probability and position). Each bucket starts from a prior worth
// `prior_weight` verdicts and moves to the observed rate as verdicts arrive, so the cost-aware k
// policy (k_policy::best_prefix) sees estimates calibrated on the traffic actually served.
// Thread-safety: a value; one owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace fw {

class acceptance_table {
 public:
  acceptance_table(std::vector<float> prior, float prior_weight);

  /// (accepted + w * prior) / (tried + w) of a bucket; buckets past the end share the last one.
  float estimate(size_t bucket) const;
  void record(size_t bucket, bool accepted);
  /// Records the target's verdicts on a proposal made when the history had `proposed_at` tokens
  /// (token i in buckets[i]): token i was verified when every token before it was accepted, and
  /// accepted when the history now holds it at proposed_at + i.
  void record_verdicts(std::span<const int32_t> history, size_t proposed_at, std::span<const int32_t> tokens,
                       std::span<const size_t> buckets);
  size_t size() const { return prior_.size(); }

 private:
  size_t slot(size_t bucket) const { return bucket < prior_.size() ? bucket : prior_.size() - 1; }
  std::vector<float> prior_, tried_, accepted_;
  float weight_;
};

}  // namespace fw
