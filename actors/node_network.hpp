// node_network: CAF's network layer for the node link, plain or over TLS (runtime/net/link_tls).
// One place decides which: a node system loads the middleman, and with TLS also CAF's OpenSSL
// manager with the node's certificate, key and CA (mutual TLS: CAF then requires and verifies a
// certificate on both sides); prefill nodes publish and decode nodes connect through the matching
// layer. A plain node and a TLS node cannot talk: the handshake fails and the link reports it.
// Thread-safety: configure before the system starts; the others from the system's actors/owner.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman_actor.hpp>

#include <string>

#include "actors/protocol/node_protocol.hpp"
#include "runtime/net/link_tls.hpp"

namespace fw::actors {

/// Loads the middleman, and with tls.enabled() the OpenSSL manager with tls's files (checked
/// beforehand by check_link_tls: CAF throws from its network thread on a file it cannot use).
void load_node_network(caf::actor_system_config& cfg, const link_tls& tls);

/// The middleman actor that connects to peers: the OpenSSL manager's when loaded.
caf::io::middleman_actor node_connector(caf::actor_system& sys);

/// Publishes `whom` on host:port through the loaded layer; the bound port.
caf::expected<uint16_t> publish_node_service(const node_service_actor& whom, uint16_t port, const char* host);

/// Why a connect failed, in words: CAF's error, with what it means for this transport (a TLS
/// handshake that fails for a plain peer or an untrusted certificate closes the connection).
std::string connect_failure(caf::actor_system& sys, const caf::error& err, const std::string& caf_text);

}  // namespace fw::actors
