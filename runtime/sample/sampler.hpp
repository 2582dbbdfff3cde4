// sampler: turns one step's logits into a token, following llama.cpp's chain: penalties
// (repeat / presence / frequency over the last repeat_last_n tokens of the history), top-k, top-p,
// min-p, temperature, softmax, then a draw from a seeded std::mt19937_64.
// Ownership: owns its parameters, random engine and scratch buffers; borrows logits and history
// for the duration of a call only.
// Thread-safety: one sampler per sequence, used by one thread at a time. The const members
// (probabilities, candidates_probs) use no shared scratch and may run concurrently with each other.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/sample/sampling_params.hpp"

namespace fw {

class sampler {
 public:
  /// A token that survived the filters with its logit after penalties and temperature, and its
  /// final probability.
  struct candidate {
    int32_t id;
    float logit;
    float p;
  };

  /// Precondition: params.validate() succeeded and n_vocab > 0 (asserted); use make() to check.
  sampler(const sampling_params& params, int32_t n_vocab);

  /// Validates params and n_vocab, then constructs; errc::invalid_argument names the bad value.
  [[nodiscard]] static expected<sampler> make(const sampling_params& params, int32_t n_vocab);

  /// Samples one token id from logits (n_vocab entries; not modified) given the token history
  /// (prompt and generated tokens, oldest first; ids outside [0, n_vocab) are ignored).
  /// temperature <= 0 gives the argmax after penalties, lowest id on ties; no random draw is used.
  [[nodiscard]] int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

  /// The final distribution over the whole vocabulary after every filter (zeros for filtered
  /// tokens, sums to 1; one-hot when greedy). Speculative decoding takes the target's p and the
  /// draft's q from here for rejection sampling.
  [[nodiscard]] std::vector<float> probabilities(std::span<const float> logits,
                                                 std::span<const int32_t> history) const;

  /// The surviving tokens with their final probabilities, most probable first (ties: lowest id).
  [[nodiscard]] std::vector<std::pair<int32_t, float>> candidates_probs(
      std::span<const float> logits, std::span<const int32_t> history) const;

  /// Draws an index with probability proportional to weights (>= 0, not all zero) using this
  /// sampler's random engine, e.g. from the residual max(0, p - q) after a rejected draft token.
  /// Returns -1 when every weight is zero.
  [[nodiscard]] int32_t draw(std::span<const float> weights);

  /// A uniform number in [0, 1) from this sampler's random engine (53 random bits); speculative
  /// decoding accepts a draft token when uniform() < p / q.
  [[nodiscard]] double uniform();

  /// Tokens that cannot be chosen until cleared (logit -inf before every filter; a sequence bans
  /// end-of-generation before its min_tokens). Empty: none.
  void set_banned(std::vector<int32_t> ids) { banned_ = std::move(ids); }
  /// set_banned(ids) that hands back the previous list in `ids` (its buffer reused: a
  /// constraint bans most of a vocabulary every step).
  void swap_banned(std::vector<int32_t>& ids) { banned_.swap(ids); }
  [[nodiscard]] bool has_banned() const { return !banned_.empty(); }

  /// Reseeds the random engine; 0 picks a random seed (see seed()).
  void reset(uint64_t seed);

  /// The seed in use (the drawn one when the requested seed was 0).
  [[nodiscard]] uint64_t seed() const { return seed_; }
  [[nodiscard]] const sampling_params& params() const { return params_; }
  [[nodiscard]] int32_t n_vocab() const { return n_vocab_; }

 private:
  // Runs the filter chain into out (cleared first) with probabilities filled in; the order of out
  // is unspecified but deterministic. window is scratch for the penalty counts.
  static void run_chain(const sampling_params& params, std::span<const int32_t> banned,
                        std::span<const float> logits, std::span<const int32_t> history,
                        std::vector<candidate>& out, std::vector<int32_t>& window);

  sampling_params params_;
  int32_t n_vocab_;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::vector<candidate> cands_;  // scratch of sample()
  std::vector<int32_t> banned_;
  std::vector<int32_t> window_;   // scratch of sample()
};

}  // namespace fw
