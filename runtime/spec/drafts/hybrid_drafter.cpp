#include "runtime/spec/drafts/hybrid_drafter.hpp"

namespace fw {

double expected_run(const draft_proposal& p) {
  double total = 1.0, reach = 1.0;
  for (float c : p.confidence) {
    reach *= c;
    total += reach;
  }
  return total;
}

expected<void> hybrid_drafter::begin(uint64_t seq, std::span<const int32_t> prompt, const sampling_params& params) {
  if (auto r = lookup_->begin(seq, prompt, params); !r) return r;
  return feature_->begin(seq, prompt, params);
}

expected<draft_proposal> hybrid_drafter::propose(uint64_t seq, std::span<const int32_t> history, int k) {
  auto lookup = lookup_->propose(seq, history, k);
  if (!lookup) return lookup;
  if (!lookup->confidence.empty() && lookup->confidence[0] >= strong_match) return lookup;
  auto feature = feature_->propose(seq, history, k);
  if (!feature || feature->tokens.empty()) return lookup;
  return expected_run(*feature) > expected_run(*lookup) ? feature : lookup;
}

void hybrid_drafter::accept(uint64_t seq, std::span<const int32_t> history) {
  lookup_->accept(seq, history);
  feature_->accept(seq, history);
}

void hybrid_drafter::end(uint64_t seq) {
  lookup_->end(seq);
  feature_->end(seq);
}

}  // namespace fw
