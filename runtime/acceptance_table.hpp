// acceptance_table: a drafter's running estimate of how often the target accepts its tokens, per
// bucket of some signal the drafter knows before verification (an n-gram's agreeing-context
// length, a model draft's own top probability and position). Each bucket starts from a prior worth
// `prior_weight` verdicts and moves to the observed rate as verdicts arrive, so the cost-aware k
// policy (k_policy::best_prefix) sees estimates calibrated on the traffic actually served.
// Thread-safety: a value; one owner.
#pragma once

#include <cstddef>
#include <vector>

namespace fw {

class acceptance_table {
 public:
  acceptance_table(std::vector<float> prior, float prior_weight);

  /// (accepted + w * prior) / (tried + w) of a bucket; buckets past the end share the last one.
  float estimate(size_t bucket) const;
  void record(size_t bucket, bool accepted);
  size_t size() const { return prior_.size(); }

 private:
  size_t slot(size_t bucket) const { return bucket < prior_.size() ? bucket : prior_.size() - 1; }
  std::vector<float> prior_, tried_, accepted_;
  float weight_;
};

}  // namespace fw
