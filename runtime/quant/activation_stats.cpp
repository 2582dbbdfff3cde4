#include "runtime/quant/activation_stats.hpp"

#include <algorithm>
#include <cmath>

namespace fw {

activation_stats::activation_stats(int64_t width, double ema, uint32_t max_samples)
    : width_(width), ema_(ema), max_samples_(max_samples), max_abs_(width, 0.f), mean_abs_(width, 0.f) {}

void activation_stats::add_batch(const float* x, int64_t ld, int64_t rows) {
  if (rows <= 0 || width_ == 0) return;
  std::vector<float> bmax(width_, 0.f);
  std::vector<double> bsum(width_, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * ld;
    for (int64_t c = 0; c < width_; ++c) {
      const float a = std::fabs(row[c]);
      bmax[c] = std::max(bmax[c], a);
      bsum[c] += a;
    }
  }
  const float bt = *std::max_element(bmax.begin(), bmax.end());
  const float keep = batches_ == 0 ? 0.f : static_cast<float>(ema_);
  for (int64_t c = 0; c < width_; ++c) {
    max_abs_[c] = keep * max_abs_[c] + (1 - keep) * bmax[c];
    mean_abs_[c] = keep * mean_abs_[c] + (1 - keep) * static_cast<float>(bsum[c] / static_cast<double>(rows));
  }
  tensor_max_ = keep * tensor_max_ + (1 - keep) * bt;
  // Samples: fill first; afterwards each batch replaces a few slots round-robin with rows spread
  // over the batch, so later batches are represented too.
  const int64_t have = samples_count();
  int64_t r = 0;
  for (; r < rows && have + r < max_samples_; ++r) samples_.insert(samples_.end(), x + r * ld, x + r * ld + width_);
  if (max_samples_ > 0 && r < rows) {
    const int64_t replace = std::min<int64_t>(rows - r, std::max<int64_t>(1, max_samples_ / 8));
    for (int64_t i = 0; i < replace; ++i) {
      const int64_t src = r + (rows - r) * i / replace;
      std::copy(x + src * ld, x + src * ld + width_, samples_.begin() + static_cast<int64_t>(replace_next_) * width_);
      replace_next_ = (replace_next_ + 1) % max_samples_;
    }
  }
  ++batches_;
  rows_seen_ += static_cast<uint64_t>(rows);
}

}  // namespace fw
