// activation_stats: what calibration learns about one product's input, batch by batch: per
// input channel the maximum |x| and the mean |x| of each batch, smoothed with an exponential
// moving average (value = ema * value + (1 - ema) * batch value; the first batch sets it), the
// per-tensor maximum the same way (a static activation scale), and a bounded sample of input
// rows (every row until the sample is full, then rows spread evenly over later batches) that
// the scale search measures output error on; optionally the Gram matrix sum x x^T over every row
// not in that sample (GPTQ's H; the sample stays held out from it). Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/thread_pool.hpp"

namespace fw {

class activation_stats {
 public:
  activation_stats() = default;
  /// gram: also sum x x^T over the rows not sampled (width^2 floats).
  activation_stats(int64_t width, double ema, uint32_t max_samples, bool gram = false);

  /// One calibration batch: rows rows of width() floats, ld apart. pool: runs the Gram product
  /// (null: one thread).
  void add_batch(const float* x, int64_t ld, int64_t rows, cpu::thread_pool* pool = nullptr);

  int64_t width() const { return width_; }
  uint64_t batches() const { return batches_; }
  uint64_t rows_seen() const { return rows_seen_; }
  /// Per channel, EMA of each batch's max |x|.
  const std::vector<float>& max_abs() const { return max_abs_; }
  /// Per channel, EMA of each batch's mean |x|.
  const std::vector<float>& mean_abs() const { return mean_abs_; }
  /// EMA of each batch's max |x| over all channels.
  float tensor_max() const { return tensor_max_; }
  /// Sampled rows, row-major, samples() rows of width().
  const std::vector<float>& samples() const { return samples_; }
  /// sum of x x^T over every row not in samples() (those stay held out from it), width x width
  /// row-major; empty unless asked for.
  const std::vector<float>& gram() const { return gram_; }
  int64_t samples_count() const { return static_cast<int64_t>(samples_.size()) / (width_ ? width_ : 1); }

 private:
  int64_t width_ = 0;
  double ema_ = 0.9;
  uint32_t max_samples_ = 0;
  uint64_t batches_ = 0, rows_seen_ = 0;
  std::vector<float> max_abs_, mean_abs_;
  float tensor_max_ = 0;
  std::vector<float> samples_;
  std::vector<float> gram_;
  uint32_t replace_next_ = 0;  ///< round-robin slot once the sample is full
};

}  // namespace fw
