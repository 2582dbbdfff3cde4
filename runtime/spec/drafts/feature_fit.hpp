// fit_feature_map: fits the feature draft's map on a target (what `flywheel fit-draft` runs).
// 1. Answers: the target answers the calibration prompts greedily, several at a time (one batched
//    forward per step). Each step gives a training pair: the inputs [h ; e ; h * e] of the state h
//    that chose token t and t's embedding e, the state at t's own position, and the token that
//    state chose (the target's next token).
// 2. Ridge regression of the next state on the inputs (normal equations through the f32
//    product, Cholesky in double): a closed-form start.
// 3. Refinement: minibatch Adam on the cross-entropy of the target's next token read through the
//    target's head over the candidate tokens (what the draft is judged on), from the ridge
//    solution. Every 20th prompt is held out; the map with the best held-out next-token accuracy
//    (the ridge solution included) is kept. Measured on SmolLM2-135M chat answers (numpy, 54k
//    pairs): 27.6% -> 32.6% of held-out next tokens, and 22.8% -> 25.5% two tokens ahead.
// Thread-safety: call from one thread; runs forwards on the backend and products on the pool.
#pragma once

#include <functional>
#include <vector>

#include "kernels/cpu/thread_pool.hpp"
#include "runtime/device/backend.hpp"
#include "runtime/spec/drafts/feature_drafter.hpp"
#include "runtime/model/model.hpp"

namespace fw {

struct feature_fit_options {
  int max_tokens = 96;         ///< greedy answer length per prompt (stops at end-of-sequence)
  uint32_t vocab_size = 2048;  ///< candidate tokens kept (the most frequent in the answers)
  double ridge = 1.0;          ///< regularization per 10,000 training pairs
  int epochs = 8;              ///< refinement passes over the training pairs (0: the ridge solution)
  double learning_rate = 2e-4; ///< Adam step of the refinement
  uint32_t batch = 16;         ///< prompts answered together
  /// Called as prompts finish with (prompts done, total); may be empty.
  std::function<void(size_t, size_t)> progress;
};

/// What a fit measured.
struct feature_fit_report {
  uint32_t pairs = 0;           ///< training pairs (held-out ones excluded)
  uint32_t held_out = 0;        ///< held-out pairs (0 with fewer than 20 prompts: no refinement)
  double ridge_accuracy = 0;    ///< held-out next-token accuracy of the ridge solution
  double accuracy = 0;          ///< of the map returned
  int epochs_kept = 0;          ///< refinement epochs of the map returned (0: the ridge solution)
};

/// Generates greedy answers to `prompts` (token ids, chat template applied) on the target and
/// fits the map on their hidden states. Needs at least 3 n_embd training pairs.
/// `pool` runs the fit's products (the target backend's kernel threads).
expected<feature_map> fit_feature_map(const model& target, backend& b, cpu::thread_pool& pool,
                                      const std::vector<std::vector<int32_t>>& prompts,
                                      const feature_fit_options& options, feature_fit_report* report = nullptr);

}  // namespace fw
