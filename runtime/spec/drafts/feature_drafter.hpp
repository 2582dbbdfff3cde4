// feature_drafter: a feature-level draft (the idea of EAGLE, with a linear map instead of a
// trained transformer layer). The target's final hidden state h at the position that chose token
// t, together with t's embedding, predicts the hidden state at t's own position:
//
//     h' ~= W [h ; e ; h * e]       (e = embed(t); W: n_embd x 3 n_embd)
//
// and the target's own output head, restricted to the tokens the target actually produces most
// (a few thousand rows), turns h' into the next token. Chaining gives further tokens. A draft
// token costs two small products (~2 MB of int8 weights), ~1.5% of a target step here, and the
// draft needs no model file of its own: the map is fit on the user's prompts by `flywheel
// fit-draft` (runtime/feature_fit.hpp: greedy answers from the target, a ridge regression on
// their hidden states, refined by the cross-entropy of the target's next tokens) and saved as a
// small GGUF.
//
// Each proposed token carries an acceptance estimate from the draft's own top probability and
// position, learned from the target's verdicts (acceptance_table), so k = auto verifies only what
// pays. Proposals are greedy (one-hot q): with sampling, rejection sampling stays exact.
// Thread-safety: one caller at a time (the drafter contract).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/matmul.hpp"
#include "runtime/spec/acceptance_table.hpp"
#include "runtime/device/backend.hpp"
#include "runtime/spec/drafts/drafter.hpp"
#include "runtime/model/model.hpp"

namespace fw {

/// The map reads 3 n_embd inputs per token: the state, the token's embedding, their product.
inline constexpr int64_t feature_inputs = 3;

/// A fitted map and the candidate tokens: what fit_feature_map produces and the file holds.
struct feature_map {
  uint32_t n_embd = 0;
  uint32_t n_vocab = 0;         ///< the target's vocabulary size (checked at load)
  std::string target_name;      ///< general.name of the target it was fit on (informational)
  uint32_t samples = 0;         ///< training pairs
  std::vector<float> weights;   ///< n_embd rows of 3 n_embd: next state = W [h ; e ; h * e], e = embed(t)
  std::vector<int32_t> vocab;   ///< tokens the draft may propose, most frequent first
};

/// GGUF file with metadata flywheel.feature.* and one f32 tensor "feature.map".
expected<void> save_feature_map(const feature_map& map, const std::string& path);
/// Errors name the file and what is wrong (not a feature map, inconsistent shapes, bad tokens).
expected<feature_map> load_feature_map(const std::string& path);

/// Token t's row of the target's embedding table, as n_embd floats.
void embed_token(const model& m, int32_t token, float* out);
/// The map's inputs for state h and token embedding t (n_embd floats each): [h ; t ; h * t].
void feature_inputs_of(const float* h, const float* t, int64_t e, float* out);

class feature_drafter final : public drafter {
 public:
  /// Checks the map against the target (width, vocabulary) and prepares its products on `pool`
  /// (the target's kernel threads).
  static expected<std::unique_ptr<feature_drafter>> create(const feature_map& map, std::shared_ptr<const model> target,
                                                           std::shared_ptr<cpu::thread_pool> pool);

  std::string name() const override { return "feature"; }
  bool scores_proposals() const override { return true; }
  bool proposes_from_history() const override { return true; }
  bool wants_hidden() const override { return true; }
  expected<void> begin(uint64_t seq, std::span<const int32_t> prompt, const sampling_params& params) override;
  expected<draft_proposal> propose(uint64_t seq, std::span<const int32_t> history, int k) override;
  /// Every sequence's chain advances together: per position one product of the map and one of
  /// the head over all the sequences still drafting (the weights read once for the batch).
  std::vector<expected<draft_proposal>> propose_batch(std::span<const draft_request> reqs) override;
  void accept(uint64_t seq, std::span<const int32_t> history) override;
  void end(uint64_t seq) override { seqs_.erase(seq); }
  void observe_hidden(uint64_t seq, std::span<const int32_t> history, std::span<const float> hidden) override;

  /// Acceptance estimate of a token proposed at `position` with top probability `p` (learned).
  float estimate(int position, float p) const;

 private:
  feature_drafter(std::shared_ptr<const model> target, std::shared_ptr<cpu::thread_pool> pool);
  /// One draft step: from state h and token t, the next state (into h) and the best candidate.
  struct seq_state;
  struct pick {
    int32_t token = 0;
    float top = 0;  ///< the draft's top probability (the acceptance bucket's signal)
  };
  /// The chain step's token from the candidates' logits (`row`, one per vocab_ entry): the argmax
  /// for a greedy sequence; for a sampled one a draw from q = softmax(row / T), T the target's
  /// temperature, seeded by the sequence's seed and the position drafted for (the same history
  /// always gives the same proposal, drafted at the verdict or at the ask), q written to `q`
  /// (n_vocab floats, 0 outside the candidates) for the target's rejection sampling.
  pick choose(const float* row, const seq_state& s, uint64_t position, std::vector<float>* q) const;
  /// Acceptance bucket of a chain step: greedy and sampled sequences keep separate rates.
  static size_t bucket_of(const seq_state& s, int position, float top);
  int32_t step(std::vector<float>& h, int32_t t, const seq_state& s, uint64_t position, float* top_p,
               std::vector<float>* q);

  struct seq_state {
    float temperature = 0;         ///< the target's; <= 0: greedy (proposals are argmaxes)
    uint64_t seed = 0;             ///< sampled: the draws' seed
    std::vector<float> hidden;     ///< the target's state that chose history.back()
    size_t hidden_for = 0;         ///< history size when it was observed
    size_t proposed_at = 0;        ///< history size at the pending proposal
    std::vector<int32_t> tokens;   ///< the pending proposal
    std::vector<size_t> buckets;   ///< its acceptance buckets
  };
  std::shared_ptr<const model> target_;
  std::shared_ptr<cpu::thread_pool> pool_;
  int64_t n_embd_ = 0;
  std::vector<int32_t> vocab_;
  std::vector<uint8_t> map_data_, head_data_;  ///< q8_0 (packed when the kernel path has a layout)
  cpu::weight_view map_, head_;
  cpu::dot_kernel kernel_{};
  cpu::matmul_scratch scratch_;
  std::vector<float> in_, next_, logits_;
  std::vector<float> batch_in_, batch_next_, batch_logits_, embed_;  ///< propose_batch's rows
  acceptance_table acceptance_;
  std::map<uint64_t, seq_state> seqs_;
};

}  // namespace fw
