// transfer_actor: moves a sequence's KV between two devices' pools (prefill -> decode after a
// prefill, decode -> offload for a long tail; the handles name their pools) through kv_codec
// (encode, check, decode), spawned detached (a 2k-token stream is tens of MB).
// The wire format is engine_limits::kv_transfer. Counts bytes, time and refusals into the
// engine's metrics. Protocol: actors/protocol/transfer_protocol.hpp.
#pragma once

#include <caf/typed_event_based_actor.hpp>

#include "actors/engine_context.hpp"
#include "actors/protocol/transfer_protocol.hpp"

namespace fw::actors {

struct transfer_state {
  explicit transfer_state(caf::local_actor*) {}
  static inline const char* name = "fw.transfer";
};

transfer_actor::behavior_type transfer_worker(transfer_actor::stateful_pointer<transfer_state> self,
                                              const engine_context* ctx);

}  // namespace fw::actors
