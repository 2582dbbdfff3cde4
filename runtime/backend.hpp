// backend: where a model's forward pass runs (CPU here; CUDA slots in behind the same interface).
// A backend owns its KV block pool and its compute resources; the model code above it only builds
// forward_batches and reads logits. Thread-safety: one forward at a time per backend.
#pragma once

#include <string>
#include <vector>

#include "runtime/expected.hpp"
#include "runtime/forward_batch.hpp"
#include "runtime/kv_block_pool.hpp"

namespace fw {

/// Which kernel path one weight type uses on a backend.
struct kernel_report {
  std::string weight_type;  ///< "q4_1"
  std::string path;         ///< "avx512-vnni", "avx2", "scalar", "cuda sm_90"
  bool fallback = false;    ///< true when a faster path exists for this type but is not used
  std::string note;
};

class backend {
 public:
  virtual ~backend() = default;

  virtual std::string name() const = 0;
  virtual kv_block_pool& kv_pool() = 0;

  /// Runs the batch: writes K/V of every row into its sequence's handle (growing it) and fills
  /// `logits` with n_vocab floats for each row whose want_logits is set, in row order.
  /// Fails with errc::out_of_memory (nothing computed) when the pool cannot hold the new tokens.
  virtual expected<void> forward(const forward_batch& batch, std::vector<float>& logits) = 0;

  virtual std::vector<kernel_report> kernel_paths() const = 0;

  /// For each row of the last forward that returned logits: the entropy (nats) of the last
  /// layer's attention weights, averaged over heads (the speculative k policy's signal). Empty
  /// when the backend does not measure it.
  virtual std::vector<float> last_attention_entropy() const { return {}; }
};

}  // namespace fw
