// batch_decoder: continuous batching over one backend. Active sequences advance together, one
// batched forward per step (one row per sequence); sequences join and leave between steps.
// It owns its sequences and releases their KV blocks when they finish or are removed.
// Thread-safety: owned by one actor (the decode actor) or thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/backend.hpp"
#include "runtime/drafter.hpp"
#include "runtime/k_policy.hpp"
#include "runtime/spec_gate.hpp"
#include "runtime/model.hpp"
#include "runtime/sequence.hpp"

namespace fw {

/// What one step produced for one sequence.
struct step_event {
  uint64_t id = 0;
  int32_t token = -1;  ///< -1: none (EOS)
  std::string text;
  bool finished = false;
  std::string finish_reason;
  uint32_t generated = 0;  ///< tokens generated so far
};

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

class batch_decoder {
 public:
  batch_decoder(const model& m, backend& b, uint32_t max_rows) : model_(m), backend_(b), max_rows_(max_rows) {}
  ~batch_decoder();
  batch_decoder(const batch_decoder&) = delete;
  batch_decoder& operator=(const batch_decoder&) = delete;

  /// Adds a sequence whose KV holds every history token but the last (next_input()).
  /// `attention_entropy`: of the prompt's last prefill layer, for the k policy when known.
  void add(std::unique_ptr<sequence> s, std::optional<float> attention_entropy = std::nullopt);
  /// Removes a sequence (cancel) and frees its KV. false when unknown.
  bool remove(uint64_t id);
  size_t active() const { return seqs_.size(); }
  bool contains(uint64_t id) const { return seqs_.count(id) > 0; }

  /// One batched forward over up to max_rows sequences (longest generations first), sampling
  /// each. Finished sequences are removed and their KV freed. On a backend error nothing
  /// advances and the error is returned.
  expected<std::vector<step_event>> step();

  /// Frees every sequence's KV (shutdown / failure).
  void clear();

  /// Turns speculative decoding on (draft non-null) or off for sequences added from now on.
  /// The drafter must outlive the decoder or the next call.
  void set_speculation(drafter* draft, k_policy policy);
  const spec_stats& speculation_stats() const { return spec_; }
  /// The speculation gate's measurements (k = auto), to carry over to a later decoder of the same
  /// target and draft (the generator keeps it across requests).
  const spec_gate& gate() const { return gate_; }
  void set_gate(const spec_gate& g) { gate_ = g; }

 private:
  const model& model_;
  backend& backend_;
  uint32_t max_rows_;
  struct slot {
    std::unique_ptr<sequence> seq;
    drafter* draft = nullptr;  ///< the drafter this sequence began with, if any
    k_state k;
  };
  std::map<uint64_t, slot> seqs_;
  drafter* draft_ = nullptr;
  k_policy policy_;
  spec_gate gate_;  ///< with an adaptive policy: drafting off while plain decoding is faster
  spec_stats spec_;
  forward_batch batch_;
  std::vector<float> logits_;
  std::vector<float> hidden_;  ///< final hidden states of the last forward, for drafts that read them
};

/// Runs a prompt span through the backend in chunks (prefill), appending to `kv` from `start`.
/// `logits` gets the last row's logits.
expected<void> prefill_tokens(backend& b, kv_handle& kv, const int32_t* tokens, size_t n, int32_t start,
                              uint32_t chunk, std::vector<float>& logits);

}  // namespace fw
