#include "runtime/sched/offload_policy.hpp"

#include <algorithm>

namespace fw {

std::vector<uint64_t> choose_offload(std::vector<offload_candidate> candidates, double decode_free_share,
                                     uint32_t offload_free_blocks, uint32_t block_tokens, const offload_limits& limits,
                                     const offload_step& step) {
  std::vector<uint64_t> out;
  const bool for_memory = decode_free_share < limits.max_free_share;
  double predicted = step.predicted_s;
  auto slow = [&] { return limits.max_step_s > 0 && predicted > limits.max_step_s; };
  if ((!for_memory && !slow()) || block_tokens == 0) return out;
  std::sort(candidates.begin(), candidates.end(), [](const offload_candidate& a, const offload_candidate& b) {
    return a.generated != b.generated ? a.generated > b.generated : a.id < b.id;
  });
  for (const auto& c : candidates) {
    if (out.size() >= limits.max_moves || c.generated <= limits.min_generated) break;
    if (!for_memory && !slow()) break;  // moved for time, and the rest now fits
    const uint64_t need = (uint64_t{c.kv_tokens} + c.remaining + 1 + block_tokens - 1) / block_tokens;
    if (need > offload_free_blocks) continue;
    offload_free_blocks -= static_cast<uint32_t>(need);
    out.push_back(c.id);
    predicted -= step.per_token_s * (c.kv_tokens + 1) + step.per_row_s;
  }
  return out;
}

}  // namespace fw
