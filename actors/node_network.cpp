#include "actors/node_network.hpp"

#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>

namespace fw::actors {

void load_node_network(caf::actor_system_config& cfg, const link_tls& tls) {
  cfg.load<caf::io::middleman>();
  if (!tls.enabled()) return;
  cfg.load<caf::openssl::manager>();
  cfg.openssl_certificate = tls.cert;
  cfg.openssl_key = tls.key;
  cfg.openssl_cafile = tls.ca;
}

caf::io::middleman_actor node_connector(caf::actor_system& sys) {
  return sys.has_openssl_manager() ? sys.openssl_manager().actor_handle() : sys.middleman().actor_handle();
}

caf::expected<uint16_t> publish_node_service(const node_service_actor& whom, uint16_t port, const char* host) {
  auto& sys = whom.home_system();
  if (sys.has_openssl_manager()) return caf::openssl::publish(whom, port, host, true);
  return sys.middleman().publish(whom, port, host, true);
}

std::string connect_failure(caf::actor_system& sys, const caf::error& err, const std::string& caf_text) {
  const bool tls = sys.has_openssl_manager();
  const auto is = [&](caf::sec s) { return err.category() == caf::atom("system") && err.code() == static_cast<uint8_t>(s); };
  if (tls && (is(caf::sec::disconnect_during_handshake) || is(caf::sec::cannot_connect_to_node)))
    return caf_text + ": no TLS session (the port is closed, the prefill node is not on TLS, or a side's tls_ca does "
                      "not verify the other's certificate)";
  if (is(caf::sec::disconnect_during_handshake))
    return caf_text + ": the peer closed the connection in the handshake (a prefill node on TLS drops a node without "
                      "[node] tls_*)";
  return caf_text;
}

}  // namespace fw::actors
