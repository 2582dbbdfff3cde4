// sequence: the decoding state of one request after its prompt is in the KV cache: sampler,
// token history, stop strings, UTF-8 assembly, token budget and timings. Given the logits of
// its last position it picks the next token and says what text to emit and whether it is done.
// The KV handle is held here but the pool (and its release) belongs to whoever runs the
// sequence. Thread-safety: owned by one actor or thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/spec/drafts/drafter.hpp"
#include "runtime/kv/kv_handle.hpp"
#include "runtime/sample/grammar_recognizer.hpp"
#include "runtime/sample/json_recognizer.hpp"
#include "runtime/sample/token_logprobs.hpp"
#include "runtime/step/token_pieces.hpp"
#include "runtime/sample/sampler.hpp"
#include "runtime/sample/sampling_params.hpp"
#include "runtime/text/stop_matcher.hpp"
#include "runtime/text/tokenizer.hpp"
#include "runtime/text/utf8_stream.hpp"

namespace fw {

/// What one sampled token did.
struct token_outcome {
  int32_t token = -1;   ///< -1 when the model ended the sequence (EOS)
  std::string text;     ///< text safe to stream now (may be empty)
  bool finished = false;
  std::string finish_reason;  ///< "stop", "length" when finished
};

class sequence {
 public:
  /// budget: tokens this sequence may still generate (already clipped to the context window).
  sequence(uint64_t id, std::vector<int32_t> prompt, const sampling_params& params, int32_t n_vocab,
           uint32_t budget);

  uint64_t id() const { return id_; }
  kv_handle& kv() { return kv_; }
  const kv_handle& kv() const { return kv_; }
  /// All tokens so far: prompt then generated.
  const std::vector<int32_t>& history() const { return history_; }
  const std::vector<int32_t>& generated() const { return generated_; }
  size_t prompt_size() const { return prompt_size_; }
  /// The token to feed next and its position (the last of history, not yet in the KV cache).
  int32_t next_input() const { return history_.back(); }
  int32_t next_position() const { return static_cast<int32_t>(history_.size()) - 1; }
  bool finished() const { return finished_; }
  const sampling_params& params() const { return params_; }

  /// Samples from `logits` (n_vocab floats for the position next_position()), appends the
  /// token and reports what to stream.
  token_outcome advance(std::span<const float> logits, const tokenizer& vocab);

  /// Speculative step. `rows` holds the target's logits for next_position() and for each
  /// proposed token's position (proposal.tokens.size() + 1 rows of n_vocab floats). Accepts the
  /// longest agreeing prefix plus one target token: greedy sampling takes the target's token at
  /// each position (identical to plain decoding); otherwise rejection sampling (accept with
  /// min(1, p/q), resample from norm(max(0, p - q))) keeps the target's distribution. Returns one
  /// outcome per token added (stops early when the sequence finishes) and the number of draft
  /// tokens accepted. The caller truncates the KV to history().size() - 1.
  std::vector<token_outcome> advance_speculative(std::span<const float> rows, const draft_proposal& proposal,
                                                 const tokenizer& vocab, int* accepted);

  /// Continues a sequence that was interrupted (its decode worker died) after it had generated
  /// `tokens`, which its client has already been sent: they join the history and the budget,
  /// and the stop-string and UTF-8 state are rebuilt as if they had been sampled, with no text
  /// emitted. Greedy continuations are identical to an uninterrupted run; a seeded sampler
  /// starts over from its seed. False (and nothing changed after the token that ended it) when
  /// the tokens would have finished the sequence: it was done already.
  bool resume(std::span<const int32_t> tokens, const tokenizer& vocab);

  /// Prompt tokens its prefill copied from the prefix cache (reported with its tokens: usage).
  uint32_t cached_tokens = 0;
  /// Its prompt's scores (sampling_params::prompt_logprobs), sent with its first event.
  std::vector<token_logprobs> prompt_logprobs;

  /// Tokens this sequence may still generate.
  uint32_t remaining() const { return budget_ > generated_.size() ? budget_ - static_cast<uint32_t>(generated_.size()) : 0; }

 private:
  /// Appends a chosen token (or ends on EOS) and reports what to stream.
  token_outcome push(int32_t tok, const tokenizer& vocab);
  /// Before min_tokens tokens, end-of-generation and the stop token ids cannot be sampled.
  void ban_endings(const tokenizer& vocab);
  /// JSON mode: bans every token that cannot continue the object, end-of-generation until it is
  /// whole, and everything but end-of-generation after.
  void constrain_json(const tokenizer& vocab);
  /// JSON schema or regex: bans every token the grammar cannot take next, end-of-generation until
  /// the text is whole, and everything but end-of-generation once nothing can follow.
  void constrain_grammar(const tokenizer& vocab);
  /// guided_choice: bans every token after which the answer is no longer a prefix of a choice,
  /// and end-of-generation until it is one.
  void constrain_choice(const tokenizer& vocab);
  /// Every token's bytes, control tokens empty (built once, for the constraints).
  void build_pieces(const tokenizer& vocab);
  /// Whether the constraint's full walk (constrain_json / _grammar / _choice) would leave token t
  /// allowed: the same rules for one token (pieces_ built).
  [[nodiscard]] bool admits(int32_t t) const;
  /// guided_choice: the answer so far is one of the choices / piece continues one of them.
  [[nodiscard]] bool choice_whole() const;
  [[nodiscard]] bool choice_continues(const std::string& piece) const;
  /// A constraint's bans start with the textless tokens and, unless the answer may end, the
  /// endings; end_bans() hands them to the sampler (allowing the endings if nothing is left).
  std::vector<int32_t>& begin_bans(bool may_end);
  void end_bans();
  bool constrained() const { return json_.has_value() || schema_.has_value() || !params_.choices.empty(); }
  /// guided_choice: the answer is a choice that no other choice extends (nothing can follow).
  bool choice_made() const;

  uint64_t id_;
  sampling_params params_;
  sampler sampler_;
  kv_handle kv_;
  std::vector<int32_t> history_;
  std::vector<int32_t> generated_;
  size_t prompt_size_;
  uint32_t budget_;
  stop_matcher stops_;
  utf8_stream utf8_;
  bool finished_ = false;
  std::optional<json_recognizer> json_;  ///< JSON mode: the answer so far
  std::optional<grammar_recognizer> schema_;  ///< a JSON schema's or a regex's grammar: the answer so far
  std::shared_ptr<const token_pieces> pieces_;  ///< constraints: every token's bytes (built at the first step)
  std::vector<int32_t> banned_buf_;       ///< constraints: the previous step's banned list (its buffer reused)
  std::string answer_;                   ///< guided_choice: the answer's bytes so far
};

}  // namespace fw
