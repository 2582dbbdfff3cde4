// forward_result: what one forward pass returns, per row that asked for logits (in row order):
// the logits, the final hidden state when the batch asked for it, and the last layer's attention
// entropy when the backend measures it. A value owned by the caller and reused across calls (its
// buffers keep their capacity), so nothing about a forward is left behind in the backend for
// another thread to read. Thread-safety: plain value.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace fw {

struct forward_result {
  std::vector<float> logits;   ///< n_vocab floats per logits row
  std::vector<float> hidden;   ///< n_embd floats per logits row (after the output norm); empty unless asked
  std::vector<float> entropy;  ///< per logits row: attention entropy (nats) of the last layer run, mean over heads; empty when not measured
  /// Seconds the forward computed, from when the device was granted (after any wait behind
  /// other work) to the end; 0 where the backend does not measure it.
  double compute_s = 0;

  /// Row i's logits (n_vocab floats).
  [[nodiscard]] std::span<const float> logits_row(size_t i, size_t n_vocab) const {
    return std::span<const float>(logits).subspan(i * n_vocab, n_vocab);
  }
  void clear() {
    logits.clear();
    hidden.clear();
    entropy.clear();
    compute_s = 0;
  }
};

}  // namespace fw
