#include "runtime/sched/prefill_chunk_budget.hpp"

#include <algorithm>
#include <cmath>

namespace fw {
namespace {

double attended(uint32_t start, uint32_t n) {
  const double p = start, m = n;
  return m * p + m * (m + 1) / 2;
}

/// Solves the k x k system m x = v (k <= 3) by Gaussian elimination; false when near-singular.
bool solve(double m[3][3], double v[3], int k, double* x) {
  double a[3][4];
  for (int i = 0; i < k; ++i) {
    for (int j = 0; j < k; ++j) a[i][j] = m[i][j];
    a[i][k] = v[i];
  }
  for (int col = 0; col < k; ++col) {
    int piv = col;
    for (int i = col + 1; i < k; ++i)
      if (std::abs(a[i][col]) > std::abs(a[piv][col])) piv = i;
    if (std::abs(a[piv][col]) < 1e-12 * std::max(1.0, std::abs(m[col][col]))) return false;
    for (int j = 0; j <= k; ++j) std::swap(a[col][j], a[piv][j]);
    for (int i = 0; i < k; ++i) {
      if (i == col) continue;
      const double f = a[i][col] / a[col][col];
      for (int j = col; j <= k; ++j) a[i][j] -= f * a[col][j];
    }
  }
  for (int i = 0; i < k; ++i) x[i] = a[i][k] / a[i][i];
  return true;
}

}  // namespace

void prefill_chunk_budget::observe(uint32_t start, uint32_t n, double seconds) {
  if (n == 0 || !(seconds >= 0) || !std::isfinite(seconds)) return;
  const double x[3] = {1.0, static_cast<double>(n), attended(start, n)};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) s_[i][j] = forget_ * s_[i][j] + x[i] * x[j];
    r_[i] = forget_ * r_[i] + x[i] * seconds;
  }
  ++chunks_;
  // The full fit when every coefficient comes out non-negative; else the best fit without the
  // fixed cost, then cost per row only (chunks of one size and context cannot separate more).
  double sol[3];
  if (solve(s_, r_, 3, sol) && sol[0] >= 0 && sol[1] >= 0 && sol[2] >= 0) {
    c_ = sol[0], b_ = sol[1], a_ = sol[2];
    fitted_ = true;
    return;
  }
  double m2[3][3] = {{s_[1][1], s_[1][2], 0}, {s_[2][1], s_[2][2], 0}, {0, 0, 0}};
  double v2[3] = {r_[1], r_[2], 0};
  if (solve(m2, v2, 2, sol) && sol[0] >= 0 && sol[1] >= 0) {
    c_ = 0, b_ = sol[0], a_ = sol[1];
    fitted_ = true;
    return;
  }
  if (s_[1][1] > 0) {
    c_ = 0, a_ = 0, b_ = std::max(0.0, r_[1] / s_[1][1]);
    fitted_ = true;
  }
}

double prefill_chunk_budget::predict(uint32_t start, uint32_t n) const {
  if (!fitted_) return -1;
  return c_ + b_ * n + a_ * attended(start, n);
}

uint32_t prefill_chunk_budget::next(uint32_t start, uint64_t left) const {
  const uint32_t hi = std::max<uint32_t>(1, lim_.max_chunk);
  const uint32_t lo = std::min(std::max<uint32_t>(1, lim_.min_chunk), hi);
  uint32_t n = hi;
  if (lim_.target_s > 0) {
    if (!fitted_) {
      n = std::clamp(lim_.first_chunk, lo, hi);
    } else {
      // The predicted time grows with n: the largest n within the target, by bisection.
      uint32_t good = lo, bad = hi + 1;
      if (predict(start, hi) <= lim_.target_s) good = hi, bad = hi + 1;
      while (bad - good > 1) {
        const uint32_t mid = good + (bad - good) / 2;
        (predict(start, mid) <= lim_.target_s ? good : bad) = mid;
      }
      n = good;
    }
  }
  return static_cast<uint32_t>(std::min<uint64_t>(n, std::max<uint64_t>(left, 1)));
}

}  // namespace fw
