// node_seal: the seal (HMAC-SHA256 under the session key, runtime/net/link_auth) of each message
// that crosses a node link once the handshake proved the shared secret: the job the decode node
// sends, each KV chunk and the reply the prefill node sends back. It covers every field but the
// seal itself, each framed, under a per-kind label (a chunk's seal cannot pass for a reply's).
// An empty key seals nothing (""): nodes without a secret. Pure.
#pragma once

#include <string>
#include <string_view>

#include "actors/protocol/node_protocol.hpp"
#include "runtime/net/link_auth.hpp"

namespace fw::actors {

std::string seal_of(std::string_view key, const remote_prefill_job& job);
std::string seal_of(std::string_view key, const kv_chunk& chunk);
std::string seal_of(std::string_view key, const remote_prefill_done& done);

/// The message carries the seal its fields have under `key` (always true for an empty key).
template <class Message>
bool sealed_by(std::string_view key, const Message& m) {
  return key.empty() || same_tag(m.seal, seal_of(key, m));
}

}  // namespace fw::actors
