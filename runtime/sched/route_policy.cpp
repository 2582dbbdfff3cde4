#include "runtime/sched/route_policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fw {

route_decision choose_route(const route_inputs& in) {
  if (!in.separate_devices) return {prefill_route::co_located, "one device prefills and decodes"};
  if (!in.prefill_device_up) return {prefill_route::co_located, "the prefill device's worker is down"};
  if (in.prompt_blocks > in.prefill_free_blocks)
    return {prefill_route::co_located, "the prefill device's KV pool has too few free blocks"};
  if (in.prefill_tokens_per_s > 0 && std::isfinite(in.deadline_s) && in.deadline_s > 0) {
    // The wait before this prompt starts: its own compute is needed on either device.
    const double wait = static_cast<double>(in.queued_tokens) / in.prefill_tokens_per_s;
    if (wait > in.deadline_s) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "the prefill device would need %.2f s for its queue before this prompt (deadline %.2f s)",
                    wait, in.deadline_s);
      return {prefill_route::co_located, buf};
    }
  }
  return {prefill_route::physical, "prefill device, KV moved to the decode device"};
}

bool prefill_overdue(double admitted_s, double now_s, double deadline_s) {
  if (!(deadline_s > 0) || !std::isfinite(deadline_s)) return false;
  return now_s - admitted_s > deadline_s;
}

bool running_prefill_overdue(double started_s, uint32_t prompt_tokens, double rate, double now_s, double deadline_s) {
  if (!(deadline_s > 0) || !std::isfinite(deadline_s)) return false;
  const double allowed = std::max(deadline_s, rate > 0 ? 2.0 * prompt_tokens / rate : 0.0);
  return now_s - started_s > allowed;
}

double update_rate(double prev, double tokens, double seconds, double weight) {
  if (!(seconds > 0) || !(tokens > 0)) return prev;
  const double x = tokens / seconds;
  return prev > 0 ? (1 - weight) * prev + weight * x : x;
}

}  // namespace fw
