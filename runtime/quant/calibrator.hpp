// calibrator: runs prefill over the calibration queries, a batch of them per forward pass, and
// records per-layer activation statistics of every product's input (activation_stats) through
// the backend's activation_observer. The backend must have been built with this calibrator as
// its observer (build_options::observer), over the unquantized reference weights.
// Thread-safety: one run at a time; observe() is called on the forward's thread.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/device/activation_observer.hpp"
#include "runtime/device/backend.hpp"
#include "runtime/quant/activation_stats.hpp"

namespace fw {

/// What calibration records: the four product inputs, and layer_out (the residual stream after
/// each layer: its sampled rows are the same tokens as the inputs', no Gram matrix), which weighs
/// a product's error by its share of the stream.
inline constexpr int calibrated_sites = activation_site_count;

struct calibration_run_options {
  uint32_t batch = 4;          ///< queries per forward pass (SPEC: larger makes scales too conservative)
  double ema = 0.9;            ///< EMA factor of the statistics
  uint32_t max_samples = 256;  ///< sampled input rows per product
  bool gram = false;           ///< also sum x x^T per product (GPTQ)
  cpu::thread_pool* pool = nullptr;  ///< runs the Gram products (null: one thread)
  /// Called after each batch with (batches done, batches total); may be empty.
  std::function<void(uint32_t, uint32_t)> progress;
  /// Set from another thread (Ctrl-C): the run stops after the current batch with errc::cancelled.
  const std::atomic<bool>* cancel = nullptr;
};

struct calibration_summary {
  uint32_t queries = 0, batches = 0;
  uint64_t tokens = 0;
};

class calibrator final : public activation_observer {
 public:
  explicit calibrator(const calibration_run_options& options) : options_(options) {}

  /// Runs the prompts (token ids, at most max_tokens each) through `b` (a model of n_layer
  /// layers, width n_embd, FFN width n_ff) in batches; statistics start afresh.
  expected<calibration_summary> run(backend& b, uint32_t n_layer, int64_t n_embd, int64_t n_ff,
                                    const std::vector<std::vector<int32_t>>& prompts, uint32_t max_tokens);

  /// The pool that runs the Gram products (known once the runtime is built).
  void use_pool(cpu::thread_pool* pool) { options_.pool = pool; }

  /// Layers with statistics (0 before a run).
  uint32_t layers() const { return static_cast<uint32_t>(stats_.size()); }
  const activation_stats& stats(uint32_t layer, activation_site site) const {
    return stats_[layer][static_cast<int>(site)];
  }

  void observe(uint32_t layer, activation_site site, const float* x, int64_t ld, int64_t rows, int64_t width) override;

 private:
  calibration_run_options options_;
  std::vector<std::array<activation_stats, calibrated_sites>> stats_;
  bool recording_ = false;
};

}  // namespace fw
