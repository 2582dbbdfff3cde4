#include "runtime/sched/prefill_order.hpp"

namespace fw {

size_t pick_prefill(std::span<const prefill_candidate> c, double now_s, double max_wait_s) {
  size_t oldest = 0, shortest = 0;
  for (size_t i = 1; i < c.size(); ++i) {
    if (c[i].queued_s < c[oldest].queued_s) oldest = i;
    const bool fewer = c[i].remaining < c[shortest].remaining;
    const bool tie_older = c[i].remaining == c[shortest].remaining && c[i].queued_s < c[shortest].queued_s;
    if (fewer || tie_older) shortest = i;
  }
  if (max_wait_s > 0 && now_s - c[oldest].queued_s >= max_wait_s) return oldest;
  return shortest;
}

}  // namespace fw
