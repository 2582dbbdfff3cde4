#include "tools/bench/soak_schedule.hpp"

#include <algorithm>

namespace fw::cli {

soak_schedule::soak_schedule(std::vector<soak_fault> kinds, double mean_gap_s, uint64_t seed)
    : kinds_(std::move(kinds)), mean_gap_s_(mean_gap_s), rng_(seed) {}

double soak_schedule::next_gap_s() {
  std::exponential_distribution<double> gap(1.0 / std::max(1e-3, mean_gap_s_));
  return gap(rng_);
}

soak_fault soak_schedule::next_kind() {
  if (bag_.empty()) {
    bag_ = kinds_;
    std::shuffle(bag_.begin(), bag_.end(), rng_);
  }
  if (bag_.empty()) return soak_fault::client_disconnect;  // no kinds: callers check kinds() first
  const soak_fault k = bag_.back();
  bag_.pop_back();
  return k;
}

}  // namespace fw::cli
