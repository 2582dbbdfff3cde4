#include "runtime/quant/activation_stats.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/matmul.hpp"

namespace fw {

activation_stats::activation_stats(int64_t width, double ema, uint32_t max_samples, bool gram)
    : width_(width), ema_(ema), max_samples_(max_samples), max_abs_(width, 0.f), mean_abs_(width, 0.f) {
  if (gram) gram_.assign(static_cast<size_t>(width * width), 0.f);
}

namespace {

/// g += x^T x for rows rows of width floats, ld apart: the batch transposed (a channel per row)
/// multiplied by itself with the f32 product kernel.
void add_gram(std::vector<float>& g, const float* x, int64_t ld, int64_t rows, int64_t width, cpu::thread_pool* pool) {
  std::vector<float> xt(static_cast<size_t>(width * rows));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; ++c) xt[c * rows + r] = x[r * ld + c];
  std::vector<float> batch(g.size());
  if (pool) {
    const cpu::weight_view v{ggml_type::f32, reinterpret_cast<const uint8_t*>(xt.data()), rows, width,
                             static_cast<uint64_t>(rows) * sizeof(float)};
    cpu::matmul_scratch scratch;
    cpu::matmul(v, cpu::select_dot_kernel(ggml_type::f32, cpu::best_simd_level()), xt.data(), rows, width,
                batch.data(), width, *pool, scratch);
  } else {
    for (int64_t a = 0; a < width; ++a)
      for (int64_t b = 0; b < width; ++b) {
        float s = 0;
        for (int64_t r = 0; r < rows; ++r) s += xt[a * rows + r] * xt[b * rows + r];
        batch[a * width + b] = s;
      }
  }
  for (size_t i = 0; i < g.size(); ++i) g[i] += batch[i];
}

}  // namespace

void activation_stats::add_batch(const float* x, int64_t ld, int64_t rows, cpu::thread_pool* pool) {
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
  // over the batch, so later batches are represented too. The Gram matrix gets every other row,
  // and each sample as it is replaced: what the scale search measures on stays out of what GPTQ
  // fits, so the search compares GPTQ with the other choices on rows it has not seen.
  const int64_t have = samples_count();
  std::vector<char> sampled(static_cast<size_t>(rows), 0);
  std::vector<float> to_gram;
  int64_t r = 0;
  for (; r < rows && have + r < max_samples_; ++r) {
    samples_.insert(samples_.end(), x + r * ld, x + r * ld + width_);
    sampled[r] = 1;
  }
  if (max_samples_ > 0 && r < rows) {
    const int64_t replace = std::min<int64_t>(rows - r, std::max<int64_t>(1, max_samples_ / 8));
    for (int64_t i = 0; i < replace; ++i) {
      const int64_t src = r + (rows - r) * i / replace;
      auto slot = samples_.begin() + static_cast<int64_t>(replace_next_) * width_;
      if (!gram_.empty()) to_gram.insert(to_gram.end(), slot, slot + width_);
      std::copy(x + src * ld, x + src * ld + width_, slot);
      sampled[src] = 1;
      replace_next_ = (replace_next_ + 1) % max_samples_;
    }
  }
  if (!gram_.empty()) {
    for (int64_t i = 0; i < rows; ++i)
      if (!sampled[i]) to_gram.insert(to_gram.end(), x + i * ld, x + i * ld + width_);
    const int64_t n = static_cast<int64_t>(to_gram.size()) / width_;
    if (n > 0) add_gram(gram_, to_gram.data(), width_, n, width_, pool);
  }
  ++batches_;
  rows_seen_ += static_cast<uint64_t>(rows);
}

}  // namespace fw
