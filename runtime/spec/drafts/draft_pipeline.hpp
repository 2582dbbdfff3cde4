// draft_pipeline: one drafter serving a decoder's speculating sequences from elsewhere (the
// draft actor). It keeps each sequence's history as the target's verdicts extend it (feedback),
// answers asks for proposals, and, for a draft that can (drafter::drafts_ahead) when it has
// threads of its own (run_ahead on), drafts the next step while the target verifies this one:
// it assumes the whole proposal is accepted and the target's next token is its own guess, and
// drafts from there. When the verdict matches the guess, the next ask is answered from that
// pre-draft at once (its drafting time hidden behind verification); otherwise the pre-draft is
// dropped and the ask drafted anew from the accepted history.
// Thread-safety: one caller at a time (the draft actor). The drafter is used only through it
// while it lives; its destructor ends every sequence it began.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/spec/drafts/drafter.hpp"
#include "runtime/spec/drafts/draft_answer.hpp"

namespace fw {

/// Cumulative counters of a draft pipeline.
struct draft_pipeline_stats {
  uint64_t asks = 0;       ///< proposals asked
  uint64_t ahead = 0;      ///< pre-drafts made while the target verified
  uint64_t hits = 0;       ///< asks answered from a pre-draft
  double draft_ms = 0;     ///< drafting the target waited for (asks not answered ahead)
  double ahead_ms = 0;     ///< drafting done ahead, during verification
  double hidden_ms = 0;    ///< the part of ahead_ms whose pre-drafts were used
};

class draft_pipeline {
 public:
  draft_pipeline(drafter& d, bool run_ahead) : draft_(d), run_ahead_(run_ahead && d.drafts_ahead()) {}
  ~draft_pipeline();
  draft_pipeline(const draft_pipeline&) = delete;
  draft_pipeline& operator=(const draft_pipeline&) = delete;

  /// Whether pre-drafting is on (asked for, and the drafter can).
  bool runs_ahead() const { return run_ahead_; }
  const drafter& draft() const { return draft_; }

  /// Starts (or restarts) a sequence whose history is every token so far.
  expected<void> begin(uint64_t id, std::vector<int32_t> history, const sampling_params& params);
  void end(uint64_t id);
  /// Ends every sequence (a new decoder took over).
  void clear();
  bool contains(uint64_t id) const { return seqs_.count(id) > 0; }
  size_t size() const { return seqs_.size(); }

  /// Up to k tokens following the sequence's history; gone when the sequence is unknown, failed
  /// when the draft errs.
  /// `target_kv`: the target's handle lent for this call (drafter::bind_target_kv), or null.
  draft_answer propose(uint64_t id, int k, kv_handle* target_kv = nullptr);
  /// A whole step's asks: each answered from its pre-draft when that stands, the rest drafted
  /// together (drafter::propose_batch); one answer per ask, in order.
  std::vector<draft_answer> propose_batch(std::span<const draft_ask> asks);
  /// The target's verdict: `appended` tokens joined the history (accepted drafts, then its own
  /// token); `hidden`: its final hidden state at the newest token, when the draft reads it.
  void feedback(uint64_t id, std::span<const int32_t> appended, std::span<const float> hidden);
  /// After an answer went out: drafts the following step from the answer plus a guessed next
  /// token (no-op unless runs_ahead()). `k`: the tokens to pre-draft.
  void run_ahead(uint64_t id, const draft_proposal& answered, int k);

  const draft_pipeline_stats& stats() const { return stats_; }

 private:
  struct ahead_draft {
    size_t base = 0;                ///< history length it assumed before `assumed`
    std::vector<int32_t> assumed;   ///< the answered proposal and the guessed target token
    draft_proposal next;            ///< the pre-drafted proposal after them
    double ms = 0;
    bool confirmed = false;         ///< the verdict matched `assumed`
  };
  struct seq_state {
    std::vector<int32_t> history;
    std::optional<ahead_draft> ahead;
  };
  drafter& draft_;
  bool run_ahead_;
  std::map<uint64_t, seq_state> seqs_;
  draft_pipeline_stats stats_;
};

}  // namespace fw
