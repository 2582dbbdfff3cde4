// drafter: proposes up to k next tokens for a sequence so the target model can verify them in
// one batched forward pass (speculative decoding). Implementations: a separate small model, a
// re-quantized copy of the target, the target's first layers (self-speculation), draft-free
// n-gram lookup; plugins provide the same interface through the plugin SDK's draft_model table.
// A drafter keeps per-sequence state (e.g. its own KV cache) keyed by sequence id; after the
// target's verdict, accept() rolls that state back to the accepted history (no recomputation of
// what was accepted). Thread-safety: one caller at a time per drafter.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/kv/kv_handle.hpp"
#include "runtime/sample/sampling_params.hpp"

namespace fw {

/// Up to k proposed tokens and, for sampled decoding, the draft's probability distribution at
/// each proposed position (n_vocab floats each). Empty `probs` means deterministic proposals
/// (q is one-hot on the proposed token). A scoring drafter (scores_proposals()) also estimates,
/// per token, the chance the target accepts it given that the tokens before it were accepted;
/// the adaptive k policy verifies only the prefix that pays (k_policy::best_prefix).
struct draft_proposal {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> probs;
  std::vector<float> confidence;  ///< empty, or one estimate per token

  /// Keeps the first n tokens (and their probs and confidences).
  void truncate(size_t n);
};

/// One sequence's ask in a batched proposal (drafter::propose_batch).
struct draft_request {
  uint64_t seq = 0;
  std::span<const int32_t> history;
  int k = 0;
};

class drafter {
 public:
  virtual ~drafter() = default;

  /// "ngram", "layer-skip", "self-quant", "model", or a plugin's name.
  virtual std::string name() const = 0;

  /// Starts a sequence; `params` are the target's sampling parameters (a model draft samples
  /// with the same temperature so its q matches what it proposes).
  virtual expected<void> begin(uint64_t seq, std::span<const int32_t> prompt, const sampling_params& params) = 0;

  /// Proposes up to k tokens following `history` (every token so far, prompt included).
  virtual expected<draft_proposal> propose(uint64_t seq, std::span<const int32_t> history, int k) = 0;

  /// Proposals for several sequences at once, one per request in order (the draft actor asks for
  /// a whole batch). A draft whose work batches overrides it (the feature draft: one product for
  /// every sequence's state per position); by default the sequences are proposed one by one.
  virtual std::vector<expected<draft_proposal>> propose_batch(std::span<const draft_request> reqs) {
    std::vector<expected<draft_proposal>> out;
    out.reserve(reqs.size());
    for (const auto& r : reqs) out.push_back(propose(r.seq, r.history, r.k));
    return out;
  }

  /// The target accepted a prefix: `history` is the sequence after acceptance (it may end with
  /// a token the draft did not propose). The draft discards state past the accepted part.
  virtual void accept(uint64_t seq, std::span<const int32_t> history) = 0;

  /// Ends a sequence and frees its state.
  virtual void end(uint64_t seq) = 0;

  /// True when proposals carry per-token acceptance estimates: with k = auto the decoder then
  /// asks for the longest proposal the policy allows and verifies the prefix that pays, instead
  /// of following the acceptance average.
  virtual bool scores_proposals() const { return false; }

  /// The target's KV handle of a sequence, called after begin(); it stays valid until end(). A
  /// draft that runs the target's own first layers (layer-skip) attends over it and writes its
  /// proposals' K/V into it instead of keeping a copy, and leaves its length as it found it.
  virtual void bind_target_kv(uint64_t /*seq*/, kv_handle* /*kv*/) {}

  /// True when proposing from a history the target has not confirmed yet is safe and worth it:
  /// the draft pipeline then drafts the next step while the target verifies this one (a separate
  /// draft model with threads of its own). Such a drafter accepts any history in propose() (its
  /// state rolls back to the common prefix) and keeps no per-proposal record for accept().
  virtual bool drafts_ahead() const { return false; }

  /// True when a proposal follows from the confirmed history (and the hidden states observed)
  /// alone, with nothing lent for the call (no target KV) and no randomness but draws fixed by
  /// the sequence's seed and position (the feature draft's for a sampled request): the same
  /// proposal whenever it is drafted. The draft pipeline then drafts a sequence's next proposal
  /// as soon as the target's verdict arrives, while the decoder is still reporting the step, and
  /// answers the next ask from it (n-gram, feature and hybrid drafts).
  virtual bool proposes_from_history() const { return false; }

  /// True when the drafter reads the target's final hidden states (observe_hidden).
  virtual bool wants_hidden() const { return false; }
  /// After each step of a sequence (speculative or not): the target's final hidden state
  /// (n_embd floats, after the output norm) at the position whose logits chose the newest token
  /// of `history`.
  virtual void observe_hidden(uint64_t /*seq*/, std::span<const int32_t> /*history*/, std::span<const float> /*hidden*/) {}
};

inline void draft_proposal::truncate(size_t n) {
  if (tokens.size() > n) tokens.resize(n);
  if (probs.size() > n) probs.resize(n);
  if (confidence.size() > n) confidence.resize(n);
}

}  // namespace fw
