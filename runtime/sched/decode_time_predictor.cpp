#include "runtime/sched/decode_time_predictor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fw {

void decode_time_predictor::observe(double sum_context, double rows, double n_layer, double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds) || rows <= 0) return;
  const double x = sum_context, z = n_layer * rows, y = seconds;
  sxx_ = forget_ * sxx_ + x * x;
  sxz_ = forget_ * sxz_ + x * z;
  szz_ = forget_ * szz_ + z * z;
  sxy_ = forget_ * sxy_ + x * y;
  szy_ = forget_ * szy_ + z * y;
  ++steps_;
  // Solve [sxx sxz; sxz szz] (a, b) = (sxy, szy); near-singular: keep the last fit.
  const double det = sxx_ * szz_ - sxz_ * sxz_;
  if (std::abs(det) <= 1e-9 * std::max(1.0, sxx_ * szz_)) return;
  double a = (sxy_ * szz_ - sxz_ * szy_) / det;
  double b = (sxx_ * szy_ - sxz_ * sxy_) / det;
  // Costs are not negative: a negative coefficient means the data cannot separate them; put
  // everything on the other one (a one-variable least squares).
  if (a < 0) {
    a = 0;
    b = szz_ > 0 ? szy_ / szz_ : 0;
  } else if (b < 0) {
    b = 0;
    a = sxx_ > 0 ? sxy_ / sxx_ : 0;
  }
  a_ = a;
  b_ = b;
  fitted_ = true;
}

double decode_time_predictor::step_seconds(double sum_context, double rows, double n_layer) const {
  return fitted_ ? a_ * sum_context + b_ * n_layer * rows : 0.0;
}

uint32_t decode_time_predictor::room(double sum_context, double rows, double n_layer, double context,
                                     double target_s) const {
  constexpr uint32_t unlimited = std::numeric_limits<uint32_t>::max();
  if (!fitted_) return unlimited;
  const double per = a_ * context + b_ * n_layer;
  const double left = target_s - step_seconds(sum_context, rows, n_layer);
  if (left < per) return 0;
  if (per <= 0) return unlimited;
  return static_cast<uint32_t>(std::min(left / per, static_cast<double>(unlimited - 1)));
}

}  // namespace fw
