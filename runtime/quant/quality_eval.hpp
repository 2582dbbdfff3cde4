// quality_eval: what a quantized model loses against its reference, measured on the same
// tokens: perplexity of both on a held-out text (chunks of ctx tokens, starting with BOS when the
// vocabulary adds one; every next-token prediction in the chunk scored), the mean KL divergence of the model's
// next-token distribution from the reference's (KL(ref || model)), top-1 agreement, the
// per-layer relative error of the residual stream (||x - x_ref||^2 / ||x_ref||^2 after each
// layer), and greedy agreement on queries (the share of generated tokens before the first
// divergence). Both backends must have been built with their layer_capture as observer.
// Thread-safety: one evaluation at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/device/activation_observer.hpp"
#include "runtime/device/backend.hpp"

namespace fw {

/// Keeps each layer's output rows of the last forward pass.
class layer_capture final : public activation_observer {
 public:
  void observe(uint32_t layer, activation_site site, const float* x, int64_t ld, int64_t rows, int64_t width) override;
  /// Layer l's rows of the last forward (rows x width), empty when not seen.
  const std::vector<float>& layer(uint32_t l) const;
  int64_t width() const { return width_; }

 private:
  std::vector<std::vector<float>> layers_;
  int64_t width_ = 0;
};

struct quality_options {
  uint32_t ctx = 512;        ///< tokens per perplexity chunk
  uint32_t max_chunks = 0;   ///< 0: the whole text
  uint32_t gen_tokens = 32;  ///< greedy tokens per query
  std::function<void(uint32_t, uint32_t)> progress;  ///< (steps done, steps total)
  const std::atomic<bool>* cancel = nullptr;
};

struct quality_report {
  uint64_t tokens = 0;  ///< scored predictions
  double ppl = 0, ppl_ref = 0;
  double kl_mean = 0, kl_max = 0;
  uint32_t kl_max_position = 0;  ///< position in its chunk of the largest KL
  double top1 = 0;  ///< share of positions where both argmaxes agree
  std::vector<double> layer_error;  ///< per layer
  uint32_t queries = 0;             ///< greedy queries run (0: none)
  double greedy_agreement = 0;      ///< mean share of tokens before the first divergence
  double greedy_exact = 0;          ///< share of queries whose continuations are identical
  double ppl_delta() const { return ppl_ref > 0 ? ppl / ppl_ref - 1 : 0; }
};

/// text: token ids of the held-out text (no BOS); bos >= 0 starts each chunk (models whose
/// vocabulary adds BOS, as llama.cpp's perplexity does), -1: chunks are plain text; queries: prompts (token ids, template applied).
expected<quality_report> evaluate_quality(backend& model_b, layer_capture& model_cap, backend& ref_b,
                                          layer_capture& ref_cap, uint32_t n_layer, uint32_t n_vocab, int32_t bos,
                                          const std::vector<int32_t>& text,
                                          const std::vector<std::vector<int32_t>>& queries, const quality_options& o);

}  // namespace fw
