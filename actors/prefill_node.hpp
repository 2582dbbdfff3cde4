// prefill_node: a process (or host) that only prefills, for decode nodes elsewhere ([node] role
// prefill, `flywheel serve --role prefill --listen HOST:PORT`). Starting it spawns the node
// service (actors/node_service_actor) on its own CAF system with the network layer and
// publishes it on the listen address; shutdown unpublishes and waits for it. The model and
// the device are owned here.
// Thread-safety: port/counters from any thread; start and shutdown from one.
#pragma once

#include <functional>
#include <memory>

#include "actors/node_service_actor.hpp"
#include "runtime/base/expected.hpp"
#include "runtime/config/node_address.hpp"
#include "runtime/model/model.hpp"
#include "runtime/net/link_tls.hpp"

namespace fw::actors {

struct prefill_node_options {
  uint32_t prefill_chunk = 256;  ///< prompt rows per forward
  std::string secret;            ///< [node] secret_file's secret; empty: unauthenticated
  link_tls tls;                  ///< [node] tls_*: the link over TLS (checked at start); disabled: plain TCP
  /// Tests only: the node protocol version it speaks (a peer of another version is refused),
  /// and a hook run before each prefill (a slow or stalled node).
  uint32_t protocol = node_protocol_version;
  std::function<void(uint64_t job)> before_prefill;
  /// Tests only: changes each KV chunk after it is sealed (a tampering network).
  std::function<void(kv_chunk&)> tamper_chunk;
};

class prefill_node {
 public:
  static expected<std::unique_ptr<prefill_node>> start(std::shared_ptr<const model> m, std::unique_ptr<backend> device,
                                                        device_identity identity, const node_address& listen,
                                                        prefill_node_options options = {});
  ~prefill_node();
  prefill_node(const prefill_node&) = delete;
  prefill_node& operator=(const prefill_node&) = delete;

  uint16_t port() const { return port_; }  ///< the bound port (listen port 0: the one chosen)
  const node_service_counters& counters() const { return counters_; }
  backend& device() { return *device_; }
  void shutdown();

 private:
  prefill_node() = default;
  struct impl;
  std::shared_ptr<const model> model_;
  std::unique_ptr<backend> device_;
  node_service_counters counters_;
  std::unique_ptr<impl> impl_;
  uint16_t port_ = 0;
};

}  // namespace fw::actors
