#include "runtime/spec/step_cost_tracker.hpp"

#include <algorithm>

namespace fw {

step_cost_tracker::step_cost_tracker(int max_rows, double alpha, int min_samples)
    : by_rows_(static_cast<size_t>(std::max(max_rows, 1))), alpha_(alpha), min_samples_(std::max(min_samples, 1)) {}

void step_cost_tracker::observe(int rows, double seconds) {
  if (rows < 1 || rows > static_cast<int>(by_rows_.size()) || !(seconds > 0)) return;
  row_stat& s = by_rows_[static_cast<size_t>(rows - 1)];
  if (s.n == 0) {
    s.avg = seconds;
  } else {
    // The first observations average plainly (1 / n), later ones with weight alpha.
    const double t = s.n >= min_samples_ ? std::clamp(seconds, 0.5 * s.avg, 2.0 * s.avg) : seconds;
    const double w = std::max(alpha_, 1.0 / (s.n + 1));
    s.avg += w * (t - s.avg);
  }
  ++s.n;
}

int step_cost_tracker::samples(int rows) const {
  return rows < 1 || rows > static_cast<int>(by_rows_.size()) ? 0 : by_rows_[static_cast<size_t>(rows - 1)].n;
}

std::vector<double> step_cost_tracker::costs(std::span<const double> prior) const {
  std::vector<double> out(prior.begin(), prior.end());
  const int n = static_cast<int>(std::min(out.size(), by_rows_.size()));
  int anchor = 0, measured = 0;
  for (int r = 1; r <= n; ++r) {
    if (by_rows_[static_cast<size_t>(r - 1)].n < min_samples_) continue;
    ++measured;
    if (anchor == 0) anchor = r;
  }
  if (measured < 2) return out;
  const double base = out[static_cast<size_t>(anchor - 1)] / by_rows_[static_cast<size_t>(anchor - 1)].avg;
  // Measured rows by their times; unmeasured rows above the anchor keep the calibration's shape
  // from the nearest measured row below (its measured / calibrated ratio).
  double ratio = 1.0;
  for (int r = anchor; r <= static_cast<int>(out.size()); ++r) {
    const size_t i = static_cast<size_t>(r - 1);
    if (r <= n && by_rows_[i].n >= min_samples_) {
      const double c = base * by_rows_[i].avg;
      ratio = prior[i] > 0 ? c / prior[i] : 1.0;
      out[i] = c;
    } else {
      out[i] = prior[i] * ratio;
    }
  }
  for (size_t i = 1; i < out.size(); ++i) out[i] = std::max(out[i], out[i - 1]);
  return out;
}

}  // namespace fw
