// node_section: [node], this process's place among several (prefill and decode in separate
// processes or hosts, connected by CAF's network layer). Role "both" serves alone; "prefill"
// publishes a prefill service on `listen` and serves no HTTP; "decode" serves the clients and
// sends prompts to the prefill nodes in `peers`, prefilling locally when none answers.
// Read by runtime/setup (the engine's node_limits) and `flywheel serve`.
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/config/sections/enum_names.hpp"

namespace fw {

enum class node_role : uint8_t { both, prefill, decode };
inline constexpr enum_table<node_role, 3> node_role_names = {{
    {node_role::both, "both"},
    {node_role::prefill, "prefill"},
    {node_role::decode, "decode"},
}};

struct node_section {
  node_role role = node_role::both;
  std::string listen;               ///< role prefill: "HOST:PORT" the prefill service is published on (port 0: any)
  std::vector<std::string> peers;   ///< role decode: the prefill nodes, "HOST:PORT" each
  uint32_t heartbeat_ms = 500;      ///< a decode node pings each connected peer this often
  uint32_t heartbeat_timeout_ms = 2000;  ///< a ping (or a connect) unanswered this long: the peer is down
  uint32_t reconnect_ms = 100;      ///< first retry after a lost or refused peer; doubles per failure
  uint32_t reconnect_max_ms = 5000; ///< the retry interval's cap
  uint32_t deadline_ms = 3000;      ///< a remote prefill not back this long is redone locally
  uint32_t chunk_kib = 1024;        ///< KV stream bytes per network message
  uint32_t min_remote_tokens = 1;   ///< shorter prompts are prefilled locally
  /// A file holding the secret the nodes share (runtime/net/link_auth): peers must prove it in
  /// the handshake and every message between them is sealed with a key derived from it. Empty:
  /// the FLYWHEEL_NODE_SECRET environment variable, else no authentication.
  std::string secret_file;
  /// TLS on the node link (runtime/net/link_tls): this node's PEM certificate chain, its key, and
  /// the CAs a peer's certificate must be signed by. All three or none; none: plain TCP.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
  bool operator==(const node_section&) const = default;
};

}  // namespace fw
