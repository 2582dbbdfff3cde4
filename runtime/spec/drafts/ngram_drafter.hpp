// ngram_drafter: draft-free prompt lookup. Finds the earlier place in the history (prompt and
// output so far) whose preceding tokens agree longest with the end of the history and proposes
// the tokens that followed it. Strong when the answer quotes the prompt (extraction, code edits,
// RAG); cheap (one scan of the history, no model).
//
// Each proposed token carries an estimate of its acceptance: the length of the agreeing context
// predicts it well (measured on SmolLM2-135M greedy answers: a 1-token match was accepted 15-24%
// of the time, 2 tokens ~55%, 5 or more ~90%). The drafter learns that curve from the target's
// verdicts (counts per match length, starting from a prior), so the cost-aware k policy can
// verify long runs where a quoted passage continues and one token or none where it does not.
// Thread-safety: one caller at a time (the drafter contract).
#pragma once

#include <map>

#include "runtime/spec/acceptance_table.hpp"
#include "runtime/spec/drafts/drafter.hpp"

namespace fw {

/// The earlier occurrence that agrees longest with the end of `history`: `length` tokens ending
/// at index `from - 1` equal the last `length` tokens of history (length capped at max_length;
/// ties go to the latest). length 0 when the last token never occurred before.
struct ngram_match {
  int length = 0;
  int64_t from = -1;  ///< index of the first continuation token
};
ngram_match longest_match(std::span<const int32_t> history, int max_length);

class ngram_drafter final : public drafter {
 public:
  /// min_match: shorter agreeing contexts propose nothing (1 = any earlier occurrence of the
  /// last token).
  explicit ngram_drafter(int min_match = 1);

  std::string name() const override { return "ngram"; }
  bool scores_proposals() const override { return true; }
  bool proposes_from_history() const override { return true; }
  expected<void> begin(uint64_t, std::span<const int32_t>, const sampling_params&) override { return {}; }
  expected<draft_proposal> propose(uint64_t seq, std::span<const int32_t> history, int k) override;
  void accept(uint64_t seq, std::span<const int32_t> history) override;
  void end(uint64_t seq) override { pending_.erase(seq); }

  /// Acceptance estimate of a token whose agreeing context is `length` tokens (learned).
  float estimate(int length) const;

 private:
  struct pending {
    size_t history_size = 0;  ///< history length when proposed
    std::vector<int32_t> tokens;
    std::vector<size_t> buckets;  ///< each token's acceptance bucket
  };
  int min_match_;
  acceptance_table acceptance_;  ///< bucket: agreeing-context length - 1 (16 and more share one)
  std::map<uint64_t, pending> pending_;  ///< per sequence: the proposal awaiting its verdict
};

}  // namespace fw
