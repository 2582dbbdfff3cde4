// engine_context: what every actor of one engine shares, read-only: the model, the device's
// backend (its forward() is internally serialized) and the limits. Owned by the engine, which
// outlives its actors.
#pragma once

#include <cstdint>

#include "runtime/backend.hpp"
#include "runtime/drafter.hpp"
#include "runtime/k_policy.hpp"
#include "runtime/metrics_registry.hpp"
#include "runtime/model.hpp"

namespace fw::actors {

struct engine_limits {
  uint32_t n_ctx = 4096;          ///< context window per sequence
  uint32_t max_batch = 16;        ///< sequences decoded together
  uint32_t max_queue = 256;       ///< waiting requests before refusing
  uint32_t prefill_chunk = 256;   ///< prompt rows per prefill forward (decode interleaves)
  double request_timeout_s = 600; ///< unfinished requests fail after this
  /// Speculative decoding in the decode actor: the draft (owned by the caller, outliving the
  /// engine; used only from the decode actor) and its k policy. Null draft: plain decoding.
  drafter* draft = nullptr;
  k_policy policy{};
};

struct engine_context {
  const model* m = nullptr;
  backend* device = nullptr;
  engine_limits limits;
  metrics_registry* metrics = nullptr;  ///< the engine's registry (the decode actor's spec counters)
  metric_labels labels;                 ///< labels every series carries (model_name)
};

}  // namespace fw::actors
