// engine_context: what every actor of one engine shares, read-only: the model, the devices'
// backends (each forward() internally serialized), the limits and (tests only) the faults. Owned by the engine, which
// outlives its actors.
#pragma once

#include <cstdint>

#include "actors/engine_faults.hpp"
#include "runtime/device/backend.hpp"
#include "runtime/setup/engine_limits.hpp"
#include "runtime/spec/drafts/drafter.hpp"
#include "runtime/spec/k_policy.hpp"
#include "runtime/metrics/metrics_registry.hpp"
#include "runtime/model/model.hpp"

namespace fw::actors {

using fw::engine_limits;

struct engine_context {
  const model* m = nullptr;
  backend* device = nullptr;          ///< the decode device (and the prefill one when co-located)
  backend* prefill_device = nullptr;  ///< the prefill device; == device when co-located
  engine_limits limits;
  const engine_faults* faults = nullptr;  ///< tests only (engine_faults.hpp); null in production
  metrics_registry* metrics = nullptr;  ///< the engine's registry (the decode actor's spec counters)
  metric_labels labels;                 ///< labels every series carries (model_name)

  /// Prefill and decode on separate devices, the KV moved between their pools.
  bool physical() const { return prefill_device != device; }
};

}  // namespace fw::actors
