// draft_pipeline: one drafter serving a decoder's speculating sequences from elsewhere (the
// draft actor). It keeps each sequence's history as the target's verdicts extend it (feedback),
// answers asks for proposals, and, for a draft that can (drafter::drafts_ahead) when it has
// threads of its own (run_ahead on), drafts the next step while the target verifies this one:
// it assumes the whole proposal is accepted and the target's next token is its own guess, and
// drafts from there. When the verdict matches the guess, the next ask is answered from that
// pre-draft at once (its drafting time hidden behind verification); otherwise the pre-draft is
// dropped and the ask drafted anew from the accepted history. A draft whose proposals follow from
// the confirmed history alone (drafter::proposes_from_history: n-gram, feature, hybrid) is drafted
// right after each verdict instead (draft_after_verdicts), at the k of the sequence's last ask,
// whether or not it has threads of its own: the decoder reports its step meanwhile, and the next
// ask of that k is answered at once.
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
  draft_pipeline(drafter& d, bool run_ahead)
      : draft_(d), run_ahead_(run_ahead && d.drafts_ahead()), after_verdicts_(d.proposes_from_history()) {}
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
  /// After a step's verdicts (feedback): drafts the next proposal of each of these sequences now,
  /// all in one batch, at the k of its last ask (no-op unless drafts_after_verdicts()). An ask of
  /// exactly that k is then answered from it; any other is drafted anew. A sequence not asked
  /// since its last such draft (the gate or the k policy let it step plainly) is left alone
  /// until it is asked again.
  void draft_after_verdicts(std::span<const uint64_t> ids);
  /// Whether verdict-time drafting is on (the drafter proposes from the history alone).
  bool drafts_after_verdicts() const { return after_verdicts_; }

  const draft_pipeline_stats& stats() const { return stats_; }

 private:
  struct ahead_draft {
    size_t base = 0;                ///< history length it assumed before `assumed`
    std::vector<int32_t> assumed;   ///< the answered proposal and the guessed target token
    draft_proposal next;            ///< the pre-drafted proposal after them
    double ms = 0;
    bool confirmed = false;         ///< the verdict matched `assumed`
    /// -1: answers any ask (truncated); else only an ask of this k (a shorter one must not leave
    /// the drafter a longer proposal on record than drafting at the ask would).
    int k = -1;
  };
  struct seq_state {
    std::vector<int32_t> history;
    int last_k = 0;      ///< the k of its last ask
    bool asked = false;  ///< asked since the last verdict-time draft (else it steps plainly now)
    std::optional<ahead_draft> ahead;
  };
  drafter& draft_;
  bool run_ahead_;
  bool after_verdicts_;
  std::map<uint64_t, seq_state> seqs_;
  draft_pipeline_stats stats_;
};

}  // namespace fw
