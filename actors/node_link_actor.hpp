// node_link_actor: a decode node's prefill worker when [node] peers are set. It speaks the
// prefill protocol to the scheduler (which needs no other change) and sends each prompt to one
// of the prefill nodes (runtime/sched/peer_choice: the connected one with the fewest in
// flight), receives the KV stream in chunks and decodes it (kv_codec) into the request's
// reservation in the decode pool. A prompt goes to its linked local prefill worker instead when
// no peer is connected, its new part is short or mostly cached here (runtime/sched/peer_choice),
// or its prompt is scored; a cached prefix otherwise goes along, the prompt whole; and it is redone there when
// its peer dies, is unreachable, misses [node] deadline_ms, or sends a stream kv_codec refuses:
// no request is lost. Each peer: connect (async, through the middleman), handshake (hello:
// refused on a mismatch, with both sides named; with [node] secret_file both sides prove the
// shared secret and every job, chunk and reply is sealed: a chunk that is not the peer's, or
// whose seal is wrong, is dropped and counted), heartbeats, reconnect with doubling backoff.
// Spawned by the supervisor on CAF's scheduler; the KV decode runs on a linked detached helper,
// and a crash of its local worker takes it down with it; the supervisor restarts them all. Protocol:
// actors/protocol/prefill_protocol.hpp + actors/protocol/node_protocol.hpp.
#pragma once

#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/engine_context.hpp"
#include "actors/node_board.hpp"
#include "actors/protocol/node_protocol.hpp"
#include "actors/protocol/prefill_protocol.hpp"

namespace fw::actors {

using node_link_actor = prefill_actor::extend<caf::reacts_to<chunk_atom, kv_chunk>, caf::reacts_to<tick_atom>>;

/// The node link's detached helper that decodes each request's KV stream into the decode pool
/// piece by piece as the chunks arrive (kv_stream_reader). The first piece brings the request's
/// reservation; the end (or an abort) returns it, with the stream's length set when it decoded.
/// (The link itself is scheduled: an actor that has talked to another node is held by the network
/// layer until it stops, which a detached one would block the actor system's shutdown on.)
struct kv_stream_part {
  uint64_t id = 0;
  std::string bytes;
  bool first = false;  ///< opens the request's stream, with its KV reservation
  kv_handle kv;
};
struct kv_stream_end {
  uint64_t id = 0;
  uint32_t payload_crc = 0;
  bool abort = false;  ///< the stream is given up: hand the KV back as it is
};
struct kv_stream_done {
  uint64_t id = 0;
  kv_handle kv;
  std::string error;  ///< empty: decoded (kv's length set)
};
using kv_stream_decoder = caf::typed_actor<caf::reacts_to<transfer_atom, kv_stream_part>,
                                           caf::replies_to<transfer_atom, kv_stream_end>::with<kv_stream_done>>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kv_stream_part& x) {
  return f(caf::meta::type_name("fw::actors::kv_stream_part"), x.id, x.bytes, x.first, x.kv);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kv_stream_end& x) {
  return f(caf::meta::type_name("fw::actors::kv_stream_end"), x.id, x.payload_crc, x.abort);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kv_stream_done& x) {
  return f(caf::meta::type_name("fw::actors::kv_stream_done"), x.id, x.kv, x.error);
}

struct node_link_state {
  explicit node_link_state(caf::local_actor*) {}
  struct peer {
    node_address address;
    node_service_actor service;
    std::string state = "down";
    uint64_t epoch = 0;     ///< bumped per connection attempt: late callbacks of older ones are ignored
    uint32_t failures = 0;  ///< since the last passed handshake
    double next_try_s = 0;
    bool ping_pending = false;
    bool trying = false;  ///< a connection attempt is in flight
    uint64_t queued_tokens = 0;  ///< prompt tokens of its prefills in flight
    double tokens_per_s = 0;     ///< its prefill rate (moving average of the forward passes)
    std::string key;             ///< the session's key once it proved the shared secret: seals every message
    peer_report report;
  };
  struct pending {
    prefill_job job;  ///< holds the request's decode-pool KV until it is delivered or redone
    caf::typed_response_promise<prefill_done> promise;
    size_t peer = 0;
    uint32_t next_seq = 0;
    bool out_of_order = false;
    bool decoding = false;   ///< the decoder has its stream open (and its KV: job.kv is empty)
    bool finishing = false;  ///< every chunk is in; the decoder's verdict comes back by itself
    bool aborting = false;   ///< given up; waiting for the decoder to hand the KV back
    uint64_t received = 0;   ///< stream bytes passed to the decoder
    std::chrono::steady_clock::time_point sent;
    std::chrono::steady_clock::time_point finish_sent;
  };
  std::vector<peer> peers;
  std::unordered_map<uint64_t, pending> in_flight;  ///< by remote job id
  uint64_t next_id = 0;
  uint64_t local_prefills = 0;
  prefill_actor local;
  kv_stream_decoder decoder;
  node_hello hello;
  static inline const char* name = "fw.node_link";
};

node_link_actor::behavior_type node_link(node_link_actor::stateful_pointer<node_link_state> self, const engine_context* ctx);

}  // namespace fw::actors
