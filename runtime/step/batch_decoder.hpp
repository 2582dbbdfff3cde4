// batch_decoder: continuous batching over one backend. Active sequences advance together, one
// batched forward per step (one row per sequence, k + 1 when verifying a draft); sequences join
// and leave between steps. A step is plan() -> execute() -> apply(): a step_plan (rows and
// proposals) in, a step_result (tokens, accepted counts, finished, failures) out.
// It owns its sequences and releases their KV blocks when they finish or are removed.
// Thread-safety: owned by one actor (the decode actor) or thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/device/backend.hpp"
#include "runtime/device/prefill.hpp"
#include "runtime/spec/drafts/drafter.hpp"
#include "runtime/spec/k_policy.hpp"
#include "runtime/spec/spec_gate.hpp"
#include "runtime/spec/step_cost_tracker.hpp"
#include "runtime/model/model.hpp"
#include "runtime/step/sequence.hpp"
#include "runtime/step/step_plan.hpp"
#include "runtime/step/step_result.hpp"

namespace fw {

/// Speculative decoding counters (cumulative).
struct spec_stats {
  uint64_t steps = 0;            ///< sequence-steps that proposed at least one token
  uint64_t draft_tokens = 0;     ///< tokens proposed
  uint64_t accepted_tokens = 0;  ///< proposed tokens the target accepted
  uint64_t draft_failures = 0;   ///< proposals that errored (the step fell back to plain decoding)
  std::vector<uint64_t> proposed_at;  ///< per position i: steps that proposed >= i + 1 tokens
  std::vector<uint64_t> accepted_at;  ///< per position i: steps that accepted >= i + 1 tokens
  double draft_ms = 0;
  double verify_ms = 0;          ///< target forward passes and acceptance
  uint64_t gated_steps = 0;      ///< steps decoded plainly because speculation measured slower (k = auto)

  double acceptance_rate() const { return draft_tokens ? double(accepted_tokens) / draft_tokens : 0; }
  /// Mean tokens gained per speculative sequence-step (accepted + the target's own token).
  double mean_accepted_length() const { return steps ? double(accepted_tokens + steps) / steps : 0; }
};

/// What planning needs to know of a draft run elsewhere (the draft actor).
struct draft_traits {
  bool scored = false;        ///< drafter::scores_proposals()
  bool wants_hidden = false;  ///< drafter::wants_hidden()
};

class batch_decoder {
 public:
  batch_decoder(const model& m, backend& b, uint32_t max_rows) : model_(m), backend_(b), max_rows_(max_rows) {}
  ~batch_decoder();
  batch_decoder(const batch_decoder&) = delete;
  batch_decoder& operator=(const batch_decoder&) = delete;

  /// Adds a sequence whose KV holds every history token but the last (next_input()).
  /// `attention_entropy`: of the prompt's last prefill layer, for the k policy when known.
  void add(std::unique_ptr<sequence> s, std::optional<float> attention_entropy = std::nullopt);
  /// Removes a sequence (cancel, failure) and frees its KV. false when unknown.
  bool remove(uint64_t id);
  /// Removes a sequence and hands its KV handle back instead of freeing it; nullopt when unknown.
  std::optional<kv_handle> detach(uint64_t id);
  /// Removes a sequence without freeing its KV (it moves to another device); null when unknown.
  std::unique_ptr<sequence> take(uint64_t id);
  /// The sequences decoding now.
  std::vector<const sequence*> sequences() const;
  size_t active() const { return seqs_.size(); }
  bool contains(uint64_t id) const { return seqs_.count(id) > 0; }

  /// One step: plan() -> execute() -> apply(). Finished and failed sequences are removed and
  /// their KV freed. A sequence whose KV cannot grow (pool exhausted, a KV error) fails alone;
  /// a forward pass that fails fails the sequences it carried; the others keep decoding.
  step_result step();
  /// The same step from a plan made by plan() (and, with remote drafting, filled by
  /// fill_proposals()): execute() then apply(), with the speculation timing and the gate.
  step_result run(step_plan p);

  /// Which sequences run this step (up to max_rows, longest generations first) with their
  /// inputs and the drafts' proposals.
  step_plan plan();
  /// Grows every planned sequence's KV for its rows, then one forward over all rows into
  /// `out`. Sequences whose KV cannot grow are moved from the plan to `failed`; an error is
  /// returned only when the forward itself fails (then every planned sequence is concerned).
  expected<void> execute(step_plan& plan, forward_result& out, std::vector<sequence_failure>& failed);
  /// Samples, accepts or rolls back every planned sequence from `out`, counts speculation and
  /// removes the sequences that finished or failed.
  step_result apply(const step_plan& plan, const forward_result& out, std::vector<sequence_failure> failed);

  /// Frees every sequence's KV (shutdown / failure).
  void clear();
  /// On: the decoder never frees a KV block: a sequence that finishes leaves its handle in
  /// step_result::returned (with the tokens it holds, for a prefix cache), one that fails in
  /// step_result::returned_failed, for the pool's one owner (the scheduler) to release. Off
  /// (default, a decoder that owns its pool: generate, benchmarks): freed here.
  void return_kv(bool on) { return_kv_ = on; }

  /// Turns speculative decoding on (draft non-null) or off for sequences added from now on.
  /// The drafter must outlive the decoder or the next call.
  void set_speculation(drafter* draft, k_policy policy);
  /// Drafting by message (the draft actor owns the drafter): the decoder keeps the k policy, the
  /// gate and verification, but plan() lists the proposals to ask (step_plan::asks) instead of
  /// drafting, fill_proposals() puts the answers in, and apply() reports what each draft must hear
  /// (step_result::feedback). Sequences added from now on speculate unless their request says 0;
  /// the caller begins and ends them on the draft (take_draft_ends).
  void set_remote_speculation(draft_traits traits, k_policy policy);
  bool remote_speculation() const { return remote_; }
  /// Puts the draft actor's answers into a plan from plan(); asks without an answer step plainly.
  /// An answer for a sequence that left meanwhile is ignored.
  void fill_proposals(step_plan& p, std::vector<draft_answer> answers);
  /// Remote drafting: the sequence decodes plainly from now on (its draft is gone); false: unknown.
  bool stop_speculating(uint64_t id);
  /// Remote drafting: every sequence decodes plainly (the draft actor is gone).
  void stop_all_speculation();
  /// Remote drafting, a new draft actor: every sequence whose request allows drafts speculates
  /// again; returned, to be begun on it.
  std::vector<const sequence*> restart_speculation();
  /// Remote drafting: the speculating sequences that left the batch since the last call.
  std::vector<uint64_t> take_draft_ends();
  const spec_stats& speculation_stats() const { return spec_; }
  /// The speculation gate's measurements (k = auto), to carry over to a later decoder of the same
  /// target and draft (the generator keeps it across requests).
  const spec_gate& gate() const { return gate_; }
  void set_gate(const spec_gate& g) { gate_ = g; }
  /// The in-situ step costs measured so far (k = auto with a calibrated verify_cost: every
  /// step's forward time by its rows, laid over the calibration every cost_refresh_steps steps);
  /// carried over like the gate.
  const step_cost_tracker& step_costs() const { return costs_; }
  void set_step_costs(const step_cost_tracker& c);
  /// Caps every sequence's draft length from now on (the supervisor lowers it on a degraded
  /// device or link); < 0: no cap.
  void set_k_cap(int cap) { k_cap_ = cap; }
  int k_cap() const { return k_cap_; }

  /// Test seam (the actor runtime's engine_faults): before a step grows a sequence's KV, `fail`
  /// is asked with its id; true makes that reservation fail as a KV error would.
  void set_kv_fault(std::function<bool(uint64_t)> fail) { kv_fault_ = std::move(fail); }

 private:
  struct slot;
  /// The failed sequences of res leave the batch (their KV freed, or returned).
  void drop_failed(step_result& res);
  /// Cuts the plan's scored proposals to the prefixes that pay for the whole step (k = auto).
  void choose_prefixes(step_plan& p);
  /// The draft hears the step's verdict: accept() and the hidden state (local), or a feedback
  /// record in res (remote). `before`: the history's length before the step.
  void tell_draft(slot& sl, size_t before, bool consulted_or_spec, std::span<const float> hidden, step_result& res);
  /// The slot leaves: its local draft ends, or a remote one is told to.
  void end_draft(slot& sl);
  const model& model_;
  backend& backend_;
  uint32_t max_rows_;
  struct slot {
    std::unique_ptr<sequence> seq;
    drafter* draft = nullptr;  ///< the drafter this sequence began with, if any
    bool remote = false;       ///< drafted by message (the draft actor)
    k_state k;
    bool speculates() const { return draft != nullptr || remote; }
  };
  std::map<uint64_t, slot> seqs_;
  std::function<bool(uint64_t)> kv_fault_;
  bool return_kv_ = false;
  drafter* draft_ = nullptr;
  bool remote_ = false;
  draft_traits traits_;
  std::vector<uint64_t> draft_ends_;
  k_policy policy_;
  spec_gate gate_;  ///< with an adaptive policy: drafting off while plain decoding is faster
  /// Observes one step's forward (rows, compute time) and, every cost_refresh_steps, prices the
  /// policy's k by the measured costs over the calibrated ones.
  void observe_step_cost(size_t rows, double seconds);
  /// The new policy's verify_cost becomes the calibration the measurements are laid over.
  void reset_step_costs();
  static constexpr int cost_refresh_steps = 16;
  std::vector<double> calibrated_cost_;  ///< the policy's verify_cost as configured
  step_cost_tracker costs_;
  int steps_since_costs_ = 0;
  int k_cap_ = -1;
  spec_stats spec_;
  std::vector<uint64_t> begin_failed_;  ///< sequences whose draft refused to begin, not yet reported
  forward_batch batch_;
  forward_result result_;  ///< the step's logits (and hidden states for drafts that read them)
};

}  // namespace fw
