// Protocol between nodes (processes or hosts) over CAF's network layer (caf::io::middleman):
// a prefill node publishes a node_service_actor; a decode node connects to it, says hello and
// sends it prompts.
//   (hello_atom, node_hello) -> node_hello      the handshake: each side sends its protocol
//                                               version, model file fingerprint, kv_codec version
//                                               and KV shape (and on GPU hosts the CUDA versions),
//                                               and both judge the pair with refuse_hello; a
//                                               refused peer's prompts are refused. The decode
//                                               node's hello carries a fresh nonce; a prefill
//                                               node with a secret answers with its own nonce and
//                                               its proof (runtime/net/link_auth)
//   (auth_atom, node_proof) -> std::string      the decode node's proof of the same secret; ""
//                                               accepts (the session's key then seals every job,
//                                               chunk and reply: actors/node_seal), else why not
//   (ping_atom) -> ok_atom                      heartbeat
//   (prefill_atom, remote_prefill_job) -> remote_prefill_done
//       before the reply the service sends the KV stream (kv_codec, produced piece by piece by
//       kv_stream_writer while it goes out) to the requester as (chunk_atom, kv_chunk) messages
//       in order; the reply says how many, how long the stream is and its payload checksum (the
//       streamed header carries 0 there), and the requester decodes each piece as it arrives
//       (kv_stream_reader).
// The decode node's side takes (chunk_atom, kv_chunk) in its node link (actors/node_link_actor).
// Every type here is registered on both sides (add_node_types).
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actors/protocol/atoms.hpp"
#include "actors/protocol/runtime_inspect.hpp"

namespace fw::actors {

/// Bumped on any change to the messages of this header; peers of another version are refused.
inline constexpr uint32_t node_protocol_version = 3;

struct node_hello {
  uint32_t protocol = 0;     ///< node_protocol_version of the sender
  std::string role;          ///< "prefill" or "decode"
  device_identity identity;  ///< what pair_check compares
  std::string nonce;         ///< 32 fresh random bytes per handshake
  std::string proof;         ///< the prefill node's link_proof; empty: it has no secret
};

struct node_proof {
  std::string proof;  ///< link_proof(secret, "decode", decode nonce, prefill nonce)
};

struct remote_prefill_job {
  uint64_t id = 0;
  std::vector<int32_t> tokens;  ///< the prompt, from position 0 (one token short, as prefill_job)
  uint8_t wire = 0;             ///< kv_wire of the stream
  uint32_t chunk_bytes = 1 << 20;
  std::string seal;             ///< HMAC under the session key (actors/node_seal); empty without a secret
};

struct kv_chunk {
  uint64_t id = 0;
  uint32_t seq = 0;   ///< 0, 1, ... in the order sent
  std::string bytes;  ///< a slice of the kv_codec stream
  std::string seal;   ///< HMAC under the session key; empty without a secret
};

struct remote_prefill_done {
  uint64_t id = 0;
  uint32_t chunks = 0;      ///< kv_chunk messages sent before this reply
  uint64_t bytes = 0;       ///< the stream's length
  double prefill_ms = 0;    ///< forward passes on the prefill node
  double encode_ms = 0;     ///< encoding the stream and handing its chunks to the network layer
  uint32_t payload_crc = 0; ///< CRC32C of the stream's payload (kv_stream_writer::payload_crc)
  float attention_entropy = -1;  ///< of the last prefilled row's last layer; < 0: unknown
  std::string error;        ///< empty: the stream is complete
  std::string seal;         ///< HMAC under the session key; empty without a secret
};

using node_service_actor =
    caf::typed_actor<caf::replies_to<hello_atom, node_hello>::with<node_hello>,
                     caf::replies_to<auth_atom, node_proof>::with<std::string>, caf::replies_to<ping_atom>::with<ok_atom>,
                     caf::replies_to<prefill_atom, remote_prefill_job>::with<remote_prefill_done>,
                     // from its own worker only (the chunks it forwards); anyone else's are dropped
                     caf::reacts_to<chunk_atom, kv_chunk>>;

/// What receives the chunks: the requester of a remote prefill (the decode node's node link).
using node_chunk_sink = caf::typed_actor<caf::reacts_to<chunk_atom, kv_chunk>>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_hello& x) {
  return f(caf::meta::type_name("fw::actors::node_hello"), x.protocol, x.role, x.identity, x.nonce, x.proof);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_proof& x) {
  return f(caf::meta::type_name("fw::actors::node_proof"), x.proof);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, remote_prefill_job& x) {
  return f(caf::meta::type_name("fw::actors::remote_prefill_job"), x.id, x.tokens, x.wire, x.chunk_bytes, x.seal);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kv_chunk& x) {
  return f(caf::meta::type_name("fw::actors::kv_chunk"), x.id, x.seq, x.bytes, x.seal);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, remote_prefill_done& x) {
  return f(caf::meta::type_name("fw::actors::remote_prefill_done"), x.id, x.chunks, x.bytes, x.prefill_ms, x.encode_ms,
           x.payload_crc, x.attention_entropy, x.error, x.seal);
}

inline void add_node_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<device_identity>("fw::device_identity");
  cfg.add_message_type<node_hello>("fw::actors::node_hello");
  cfg.add_message_type<node_proof>("fw::actors::node_proof");
  cfg.add_message_type<remote_prefill_job>("fw::actors::remote_prefill_job");
  cfg.add_message_type<kv_chunk>("fw::actors::kv_chunk");
  cfg.add_message_type<remote_prefill_done>("fw::actors::remote_prefill_done");
  cfg.add_message_type<node_service_actor>("fw::actors::node_service_actor");
}

}  // namespace fw::actors
