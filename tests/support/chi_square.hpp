// Pearson's chi-square of observed token counts against expected probabilities, for the tests
// that check a sampler or a draft draws from the distribution it claims.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace fw::test {

struct chi_square_result {
  double chi2 = 0;
  double df = 0;  ///< bins - 1
  /// Far beyond the 99.9th percentile of chi-square(df): what correct sampling never reaches.
  [[nodiscard]] double limit() const { return df + 6 * std::sqrt(2 * df); }
};

/// Bins with an expected count of 5 or more count on their own, the rest pooled into one.
inline chi_square_result chi_square(const std::vector<int>& counts, const std::vector<float>& p, int trials) {
  chi_square_result r;
  double pooled_e = 0, pooled_o = 0;
  int bins = 0;
  for (size_t i = 0; i < p.size() && i < counts.size(); ++i) {
    const double e = static_cast<double>(p[i]) * trials;
    if (e >= 5) {
      r.chi2 += (counts[i] - e) * (counts[i] - e) / e;
      ++bins;
    } else {
      pooled_e += e;
      pooled_o += counts[i];
    }
  }
  if (pooled_e >= 5) {
    r.chi2 += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
    ++bins;
  }
  r.df = bins - 1;
  return r;
}

}  // namespace fw::test
