// hybrid_drafter: prompt lookup where the context repeats, the feature draft elsewhere. Both are
// scoring drafters; each step takes the proposal with the longer expected accepted run
// (1 + c0 + c0 c1 + ... over its acceptance estimates). A confident n-gram match (first estimate
// >= strong_match) is taken without running the feature draft. Both parts see every verdict and
// keep learning their estimates. Measured on SmolLM2-135M chat answers, where each alone gains
// ~9%, the mix gains about twice that: they are right at different places (n-gram on repeated
// phrases, the feature draft on common continuations).
// Thread-safety: one caller at a time (the drafter contract).
#pragma once

#include <memory>

#include "runtime/spec/drafts/feature_drafter.hpp"
#include "runtime/spec/drafts/ngram_drafter.hpp"

namespace fw {

class hybrid_drafter final : public drafter {
 public:
  static constexpr float strong_match = 0.5f;

  hybrid_drafter(std::unique_ptr<ngram_drafter> lookup, std::unique_ptr<feature_drafter> feature)
      : lookup_(std::move(lookup)), feature_(std::move(feature)) {}

  std::string name() const override { return "hybrid"; }
  bool scores_proposals() const override { return true; }
  bool proposes_from_history() const override { return true; }
  bool wants_hidden() const override { return true; }
  expected<void> begin(uint64_t seq, std::span<const int32_t> prompt, const sampling_params& params) override;
  expected<draft_proposal> propose(uint64_t seq, std::span<const int32_t> history, int k) override;
  /// The lookups one by one, then the feature draft for every sequence without a strong match in
  /// one batch; per sequence the proposal with the longer expected run, as propose().
  std::vector<expected<draft_proposal>> propose_batch(std::span<const draft_request> reqs) override;
  void accept(uint64_t seq, std::span<const int32_t> history) override;
  void end(uint64_t seq) override;
  void observe_hidden(uint64_t seq, std::span<const int32_t> history, std::span<const float> hidden) override {
    feature_->observe_hidden(seq, history, hidden);
  }

 private:
  std::unique_ptr<ngram_drafter> lookup_;
  std::unique_ptr<feature_drafter> feature_;
};

/// 1 + c0 + c0 c1 + ...: the expected tokens a step gains from a scored proposal if all of it
/// is verified.
double expected_run(const draft_proposal& p);

}  // namespace fw
