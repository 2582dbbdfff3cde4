// k_policy: how many draft tokens to propose per speculative step (pure decision code).
//   fixed:     k (default 5, the measured sweet spot).
//   by prompt: < 32 prompt tokens -> 3, > 128 -> 5 (between: 5).
//   by entropy of the last prefill layer's attention: > 2.5 -> 3, else 5.
//   adaptive:  an exponential moving average of the acceptance rate moves k down when drafts are
//              mostly rejected (to 0 = no speculation, re-probing now and then) and up when they
//              are mostly accepted, so speculation backs off where it does not pay.
//   cap:       by the decode device's memory bandwidth (about 5 at 200 GB/s, 7 at 400 GB/s).
//   cost-aware (adaptive, when the backend's verification cost is known): once a sequence has an
//              acceptance estimate a, k maximizes expected tokens per step over the step's cost,
//              (1 + a + ... + a^k) / cost(k + 1 rows), so k shrinks where extra rows are dear
//              (a CPU whose multi-row steps are compute-bound) and grows where they are cheap.
// Thread-safety: a k_policy is a value; per-sequence state lives in k_state.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace fw {

struct k_policy_config {
  bool adaptive = true;           ///< "auto"; false = fixed k
  int fixed_k = 5;
  int k_min = 0;                  ///< adaptive floor (0 = plain decoding for that sequence)
  int k_max = 8;
  int short_prompt = 32;          ///< below: k = k_short
  int long_prompt = 128;          ///< above: k = k_long
  int k_short = 3;
  int k_long = 5;
  float entropy_threshold = 2.5f;
  double ema_alpha = 0.3;         ///< weight of the newest step in the acceptance average
  /// Acceptance EMA below: k - 1. On a CPU a verified extra row costs about half a one-row step
  /// (measured by `flywheel bench-spec`), so below ~50% acceptance drafting loses time.
  double lower_at = 0.5;
  double raise_at = 0.85;         ///< acceptance EMA above: k + 1
  int reprobe_every = 32;         ///< steps at k = 0 before trying k = 1 again (doubling per failed probe)
  int max_reprobe_wait = 1024;    ///< the longest wait between probes
  double bandwidth_gbs = 0;       ///< decode device bandwidth; 0 = no cap
  /// verify_cost[k]: time of a forward over k + 1 rows relative to one row (verify_cost[0] = 1),
  /// measured on the target backend (calibrate_verify_cost); empty = unknown (acceptance
  /// thresholds only).
  std::vector<double> verify_cost;
  /// With verify_cost and adaptive: the decoder re-prices verify_cost by its own steps' forward
  /// times (step_cost_tracker). Off: the calibration alone, so k choices do not follow the
  /// machine's load (tests that compare proposals between runs).
  bool learn_step_costs = true;
};

/// Per-sequence adaptive state.
struct k_state {
  int k = 5;
  double acceptance_ema = -1;  ///< < 0: no observation yet
  int steps_at_zero = 0;
  /// Plain steps before the next probe at k = 1 (0: reprobe_every). Doubles after each probe that
  /// falls back to 0 (up to max_reprobe_wait): a model draft's probe must first catch up on every
  /// token since the last one, which costs a few target steps each time.
  int reprobe_wait = 0;
  bool probing = false;  ///< the current k = 1 is a probe
};

class k_policy {
 public:
  explicit k_policy(k_policy_config c = {}) : c_(c) {}

  /// The cap implied by the configured bandwidth (k_max when none).
  int bandwidth_cap() const;
  /// k for a new sequence from its prompt length and, when known, the last prefill layer's
  /// attention entropy (nats).
  int initial_k(int prompt_tokens, std::optional<float> attention_entropy = std::nullopt) const;
  /// Starts a sequence's state.
  k_state start(int prompt_tokens, std::optional<float> attention_entropy = std::nullopt) const;
  /// Records a step's result (proposed may be 0 when k was 0) and updates k.
  void observe(k_state& s, int proposed, int accepted) const;
  /// k to use now given the tokens the sequence may still generate.
  int k_for(const k_state& s, uint32_t remaining) const;
  /// The k in [0, max_k] with the most expected tokens per unit of step cost at acceptance a
  /// (needs verify_cost; max_k is also limited by its length). batch_rows: the step's plain rows
  /// (this sequence's among them); see best_prefix.
  int best_k(double acceptance, int max_k, int batch_rows = 1) const;
  /// For a scored proposal (confidence[i]: chance token i is accepted once the ones before it
  /// are): the prefix length m with the most expected tokens, 1 + c0 + c0 c1 + ..., per unit of
  /// the cost of verifying m + 1 rows; 0 = plain decoding pays more. In a step of batch_rows
  /// plain rows the m rows are judged by the whole step: (batch_rows - 1 + expected tokens) per
  /// step_cost(batch_rows + m) against batch_rows per step_cost(batch_rows), so where extra rows
  /// cost as much as the rows already there (a CPU whose batched steps are compute-bound) a
  /// large batch drafts little or nothing. Without a verify_cost: every token up to the first
  /// estimate below lower_at.
  int best_prefix(std::span<const float> confidence, int batch_rows = 1) const;
  /// best_prefix for all the scored proposals of one step at once (best_prefix is its
  /// one-proposal case): prefixes[i] for proposal i, judged together. Each sequence's m rows are
  /// not weighed alone against the plain rows (as if no other sequence drafted): every drafted row makes the same step dearer, so the step's
  /// expected tokens, batch_rows + the sum of the chosen reaches (c1, c1 c2, ... of each
  /// proposal), over step_cost(batch_rows + rows drafted) is maximized over the total, taking the
  /// likeliest tokens of all proposals first (a reach never grows along a proposal, so that set is
  /// a prefix of each). Without a verify_cost each proposal keeps the threshold rule.
  std::vector<int> best_prefixes(std::span<const std::span<const float>> confidences, int batch_rows) const;
  /// A step of `rows` rows relative to one row: verify_cost where measured (rows <= its length),
  /// beyond it extended by the slope of its upper half. Needs verify_cost.
  double step_cost(int rows) const;
  /// The proposal length to ask a scoring drafter for (scores_proposals()): with k = auto the
  /// longest allowed (best_prefix then trims it), else the fixed k; never more than remaining - 1.
  int k_for_scored(uint32_t remaining) const;

  const k_policy_config& config() const { return c_; }
  /// Replaces verify_cost (the decoder's in-situ measurements laid over the calibration:
  /// step_cost_tracker); a vector shorter than 2 makes the policy cost-blind again.
  void set_verify_cost(std::vector<double> cost) { c_.verify_cost = std::move(cost); }

 private:
  /// k after an observation updated s's acceptance average.
  int next_k(const k_state& s) const;

  k_policy_config c_;
};

}  // namespace fw
