// backend: where a model's forward pass runs (CPU here; CUDA slots in behind the same interface).
// A backend owns its KV block pool and its compute resources; the model code above it only builds
// forward_batches and reads forward_results. Thread-safety: forward() calls are serialized by the
// backend; everything a forward produces comes back in its forward_result.
#pragma once

#include <string>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/device/forward_batch.hpp"
#include "runtime/device/forward_result.hpp"
#include "runtime/kv/kv_block_pool.hpp"

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
  /// `out` for each row whose want_logits is set, in row order: logits (n_vocab floats each),
  /// hidden states when batch.want_hidden, and the last layer's attention entropy (the
  /// speculative k policy's signal) when the backend measures it. Fails with errc::out_of_memory
  /// (nothing computed) when the pool cannot hold the new tokens.
  virtual expected<void> forward(const forward_batch& batch, forward_result& out) = 0;

  /// forward() for callers that want only the logits (reuses `logits`' buffer).
  expected<void> forward(const forward_batch& batch, std::vector<float>& logits) {
    forward_result r;
    r.logits.swap(logits);
    auto ok = forward(batch, r);
    logits.swap(r.logits);
    return ok;
  }

  virtual std::vector<kernel_report> kernel_paths() const = 0;

  /// One line for banners: "cpu backend, 2 threads".
  virtual std::string summary() const { return name() + " backend"; }
};

}  // namespace fw
