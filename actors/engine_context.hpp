// engine_context: what every actor of one engine shares, read-only: the model, the devices'
// backends (each forward() internally serialized), the limits and (tests only) the faults. Owned by the engine, which
// outlives its actors.
#pragma once

#include <cstdint>

#include "actors/engine_faults.hpp"
#include "actors/node_board.hpp"
#include "runtime/device/backend.hpp"
#include "runtime/device/device_set.hpp"
#include "runtime/setup/engine_limits.hpp"
#include "runtime/spec/drafts/drafter.hpp"
#include "runtime/spec/k_policy.hpp"
#include "runtime/metrics/metrics_registry.hpp"
#include "runtime/model/model.hpp"

namespace fw::actors {

using fw::engine_limits;

struct engine_context {
  const model* m = nullptr;
  const device_set* devices = nullptr;  ///< the engine's devices, each with its role
  engine_limits limits;
  const engine_faults* faults = nullptr;  ///< tests only (engine_faults.hpp); null in production
  metrics_registry* metrics = nullptr;  ///< the engine's registry (the decode actor's spec counters)
  metric_labels labels;                 ///< labels every series carries (model_name)
  node_board* nodes = nullptr;          ///< [node] peers: the node link's view of them; null without peers

  /// The decode device (role decode or both).
  backend* device() const { return devices->decoder(); }
  /// The prefill device: a separate one (role prefill), else the decode device.
  backend* prefill_device() const { return devices->prefiller(); }
  /// The offload device (role offload); null: none.
  backend* offload_device() const { return devices->offloader(); }
  /// Prefill and decode on separate devices, the KV moved between their pools.
  bool physical() const { return devices->separate(); }
  /// A transfer worker moves KV between pools (a physical pair or an offload device).
  bool transfers() const { return physical() || offload_device() != nullptr; }
  /// Prompts go to prefill nodes over the network ([node] role decode).
  bool networked() const { return !limits.nodes.peers.empty() && !physical(); }
  /// The pool of this id among the engine's devices; null when none has it.
  kv_block_pool* pool_by_id(uint32_t id) const { return devices->pool_by_id(id); }
};

}  // namespace fw::actors
