// node_service_actor: the prefill node's side of several nodes. Published on [node] listen by
// actors/prefill_node; a decode node connects, says hello (the handshake is refused, naming both
// sides, on another protocol version, model file, KV format or shape), then sends prompts: each
// is prefilled into this node's own KV pool, encoded with kv_codec, sent back in chunks and
// released. Spawned detached: the forward passes block its own thread. Garbage on the port never
// reaches it (CAF's handshake drops the connection); a job from a node that did not pass the
// handshake is refused. Protocol: actors/protocol/node_protocol.hpp.
#pragma once

#include <caf/typed_event_based_actor.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include "actors/protocol/node_protocol.hpp"
#include "runtime/device/backend.hpp"

namespace fw::actors {

/// What a prefill node has done, readable from any thread.
struct node_service_counters {
  std::atomic<uint64_t> hellos{0}, refused{0}, prefills{0}, failed{0}, bytes{0};
};

struct node_service_config {
  backend* device = nullptr;   ///< owned by the prefill node, outlives the actor
  device_identity identity;    ///< this node, for the handshake
  uint32_t prefill_chunk = 256;
  node_service_counters* counters = nullptr;  ///< optional
  uint32_t protocol = node_protocol_version;  ///< tests: another version
  std::function<void(uint64_t job)> before_prefill;  ///< tests: a slow or stalled node
};

struct node_service_state {
  explicit node_service_state(caf::local_actor*) {}
  std::set<std::string> accepted;  ///< rendered node ids of peers that passed the handshake
  static inline const char* name = "fw.node_service";
};

node_service_actor::behavior_type node_service(node_service_actor::stateful_pointer<node_service_state> self,
                                               node_service_config cfg);

/// The handshake's verdict on a peer's hello ("" accepts): protocol version, then pair_check of
/// the model, KV format and shape (CUDA versions between GPU hosts). Pure.
std::string refuse_hello(const node_hello& mine, const node_hello& theirs);

}  // namespace fw::actors
