// scheduler_section: [scheduler], admission and batching limits of the actor runtime. Read by
// runtime/setup into the engine's limits. Thread-safety: plain value.
#pragma once

#include <cstdint>

namespace fw {

struct scheduler_section {
  uint32_t max_batch = 16;          ///< sequences decoded together in one step
  uint32_t max_queue = 256;         ///< requests waiting for admission before new ones are refused
  uint32_t prefill_chunk = 512;     ///< prompt tokens per prefill step
  double request_timeout_s = 600;   ///< whole-request limit; 0: none
  bool operator==(const scheduler_section&) const = default;
};

}  // namespace fw
