// percentile: the q-quantile (0..1) of samples, linearly interpolated between the nearest ranks;
// 0 for no samples. Shared by the benchmarks (bench --concurrency, bench --server).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace fw::cli {

inline double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace fw::cli
