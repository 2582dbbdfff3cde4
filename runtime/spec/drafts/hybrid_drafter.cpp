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

std::vector<expected<draft_proposal>> hybrid_drafter::propose_batch(std::span<const draft_request> reqs) {
  std::vector<expected<draft_proposal>> out;
  out.reserve(reqs.size());
  std::vector<size_t> weak;  // requests whose lookup found no strong match
  std::vector<draft_request> feature_reqs;
  for (size_t r = 0; r < reqs.size(); ++r) {
    out.push_back(lookup_->propose(reqs[r].seq, reqs[r].history, reqs[r].k));
    if (!out.back() || (!out.back()->confidence.empty() && out.back()->confidence[0] >= strong_match)) continue;
    weak.push_back(r);
    feature_reqs.push_back(reqs[r]);
  }
  auto feature = feature_->propose_batch(feature_reqs);
  for (size_t j = 0; j < weak.size(); ++j) {
    auto& f = feature[j];
    if (f && !f->tokens.empty() && expected_run(*f) > expected_run(*out[weak[j]])) out[weak[j]] = std::move(f);
  }
  return out;
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
