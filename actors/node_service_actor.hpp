// node_service_actor: the prefill node's side of several nodes. Published on [node] listen by
// actors/prefill_node; a decode node connects, says hello (the handshake is refused, naming both
// sides, on another protocol version, model file, KV format or shape), then sends prompts: each
// is prefilled into this node's own KV pool, encoded with kv_codec piece by piece while the
// chunks already encoded go out, and released. The service runs on CAF's scheduler and answers hellos and heartbeats at once; the
// forward passes run on its linked detached worker, one job at a time. (An actor that talks to
// another node is held by the network layer until it stops: a detached one would block the
// actor system's shutdown.) Garbage on the port never
// reaches it (CAF's handshake drops the connection); a job from a node that did not pass the
// handshake is refused. With a secret ([node] secret_file) a peer passes only by proving it
// (runtime/net/link_auth: nonces both ways, so a recorded handshake cannot be replayed); its jobs
// must carry the session's seal and ascending ids, and the chunks and replies it gets are sealed
// (actors/node_seal). Protocol: actors/protocol/node_protocol.hpp.
#pragma once

#include <caf/typed_event_based_actor.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>

#include "actors/protocol/node_protocol.hpp"
#include "runtime/device/backend.hpp"

namespace fw::actors {

/// What a prefill node has done, readable from any thread.
struct node_service_counters {
  std::atomic<uint64_t> hellos{0}, refused{0}, prefills{0}, failed{0}, bytes{0};
  std::atomic<uint64_t> forged{0};  ///< jobs refused for a wrong, missing or replayed seal
};

struct node_service_config {
  backend* device = nullptr;   ///< owned by the prefill node, outlives the actor
  device_identity identity;    ///< this node, for the handshake
  uint32_t prefill_chunk = 256;
  node_service_counters* counters = nullptr;  ///< optional
  std::string secret;  ///< shared with the decode nodes (runtime/net/link_auth); empty: none
  uint32_t protocol = node_protocol_version;  ///< tests: another version
  std::function<void(uint64_t job)> before_prefill;  ///< tests: a slow or stalled node
  std::function<void(kv_chunk&)> tamper_chunk;       ///< tests: a network that changes sealed chunks
};

/// The service's detached helper: the prefill of one job, then its KV stream encoded piece by
/// piece (kv_stream_writer) and sent to the service as (chunk_atom, kv_chunk) while it encodes
/// the rest, then the reply. The job's id is the service's own (see node_service_state::out).
using node_prefill_worker =
    caf::typed_actor<caf::replies_to<prefill_atom, remote_prefill_job>::with<remote_prefill_done>>;

struct node_service_state {
  explicit node_service_state(caf::local_actor*) {}
  std::set<std::string> accepted;  ///< rendered node ids of peers that passed the handshake
  /// With a secret: the handshakes waiting for the peer's proof (the two nonces), by node id,
  /// each answered once; and the passed ones' session keys and the last job id each sent.
  struct challenge {
    std::string decode_nonce, prefill_nonce;
  };
  struct session {
    std::string key;
    uint64_t last_job = 0;
  };
  std::unordered_map<std::string, challenge> challenges;
  std::unordered_map<std::string, session> sessions;
  node_prefill_worker worker;      ///< linked: its crash takes the service down (peers fail over)
  struct outgoing {
    node_chunk_sink dest;  ///< the requester
    uint64_t id = 0;       ///< its id for the job
    std::string key;       ///< its session's key: the chunks are sealed with it
  };
  std::unordered_map<uint64_t, outgoing> out;  ///< by the service's job id: where the worker's chunks go
  uint64_t next_job = 0;
  static inline const char* name = "fw.node_service";
};

node_service_actor::behavior_type node_service(node_service_actor::stateful_pointer<node_service_state> self,
                                               node_service_config cfg);

/// The handshake's verdict on a peer's hello ("" accepts): protocol version, then pair_check of
/// the model, KV format and shape (CUDA versions between GPU hosts). Pure.
std::string refuse_hello(const node_hello& mine, const node_hello& theirs);

}  // namespace fw::actors
