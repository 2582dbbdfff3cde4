// step_plan: what one decode step will run, decided before any forward pass: which sequences
// (at most the batch's rows, longest generations first), each one's next input token and
// position, and the draft's proposal to verify (empty: a plain step for that sequence). The
// first of the two values of a step (step_result is the second), so planning, running and
// accepting are separate and testable. Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/spec/drafts/draft_answer.hpp"
#include "runtime/spec/drafts/drafter.hpp"

namespace fw {

struct planned_sequence {
  uint64_t id = 0;
  int32_t input = 0;       ///< the token fed at `position` (the newest, not yet in the KV cache)
  int32_t position = 0;
  draft_proposal proposal;  ///< tokens to verify after `input`; empty: plain step
  /// A scoring draft whose whole proposal was trimmed away: it still hears the plain step's
  /// verdict, so its acceptance estimates keep learning.
  bool consulted = false;
  /// The proposal's length is final: not scored (verified as proposed), or already cut to the
  /// step's best prefixes (batch_decoder::choose_prefixes).
  bool prefix_chosen = false;

  /// Forward rows of this sequence: the input plus the proposal.
  [[nodiscard]] size_t rows() const { return 1 + proposal.tokens.size(); }
};

struct step_plan {
  std::vector<planned_sequence> seqs;  ///< in row order
  std::vector<draft_ask> asks;         ///< remote drafting: the proposals to ask for (fill_proposals)
  bool drafting = false;     ///< drafts were asked (false: no draft, or the gate held them off)
  bool want_hidden = false;  ///< a draft reads the target's hidden states
  double draft_ms = 0;       ///< time spent proposing
  std::vector<uint64_t> draft_failed;  ///< sequences whose draft errored (they step plainly)

  [[nodiscard]] bool any_draft() const {
    for (const auto& s : seqs)
      if (!s.proposal.tokens.empty()) return true;
    return false;
  }
};

}  // namespace fw
