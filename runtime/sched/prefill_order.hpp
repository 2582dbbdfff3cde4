// prefill_order: which waiting prompt a device that prefills one prompt at a time runs next
// ([scheduler] prefill_order). "shortest": the prompt with the least prefill work left, so a
// short question that arrives behind a long document waits for at most one slice of it instead
// of its whole prefill (shortest-remaining-time-first); a prompt that has waited max_wait_s goes
// first regardless (the oldest such), so long prompts are never starved. "fifo": arrival order.
// Pure: the caller passes the time.
// Thread-safety: none needed (free functions over values).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace fw {

struct prefill_candidate {
  uint64_t id = 0;
  uint32_t remaining = 0;  ///< prompt tokens still to prefill
  double queued_s = 0;     ///< when it was admitted (its waiting starts then)
};

/// Index (into c, not empty, in arrival order) of the prompt to run next under "shortest" with
/// the given bound (max_wait_s <= 0: no bound). Ties go to the earlier index.
[[nodiscard]] size_t pick_prefill(std::span<const prefill_candidate> c, double now_s, double max_wait_s);

}  // namespace fw
