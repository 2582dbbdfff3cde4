#include "runtime/base/cholesky.hpp"

#include <cmath>

namespace fw {

int64_t cholesky_lower(std::vector<double>& a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double* lj = &a[j * n];
    double d = lj[j];
    for (int64_t k = 0; k < j; ++k) d -= lj[k] * lj[k];
    if (!(d > 0)) return j;
    d = std::sqrt(d);
    lj[j] = d;
    for (int64_t i = j + 1; i < n; ++i) {
      double* li = &a[i * n];
      double s = li[j];
      for (int64_t k = 0; k < j; ++k) s -= li[k] * lj[k];
      li[j] = s / d;
    }
  }
  return -1;
}

}  // namespace fw
