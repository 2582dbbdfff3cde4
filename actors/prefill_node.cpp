#include "actors/prefill_node.hpp"

#include <caf/all.hpp>
#include "actors/node_network.hpp"
#include "actors/protocol/errc_error.hpp"

namespace fw::actors {
namespace {

class prefill_node_config : public caf::actor_system_config {
 public:
  explicit prefill_node_config(const link_tls& tls) {
    load_node_network(*this, tls);
    add_node_types(*this);
    add_errc_category(*this);
    set("scheduler.policy", caf::atom("sharing"));
    set("scheduler.max-threads", 1);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

}  // namespace

struct prefill_node::impl {
  explicit impl(const link_tls& tls) : cfg(tls) {}
  prefill_node_config cfg;
  caf::actor_system system{cfg};
  node_service_actor service;
};

expected<std::unique_ptr<prefill_node>> prefill_node::start(std::shared_ptr<const model> m, std::unique_ptr<backend> device,
                                                            device_identity identity, const node_address& listen,
                                                            prefill_node_options options) {
  if (options.tls.enabled())
    if (auto ok = check_link_tls(options.tls); !ok) return ok.err();
  std::unique_ptr<prefill_node> n(new prefill_node());
  n->model_ = std::move(m);
  n->device_ = std::move(device);
  n->impl_ = std::make_unique<impl>(options.tls);
  node_service_config sc;
  sc.device = n->device_.get();
  sc.identity = std::move(identity);
  sc.prefill_chunk = options.prefill_chunk == 0 ? 256 : options.prefill_chunk;
  sc.protocol = options.protocol;
  sc.before_prefill = std::move(options.before_prefill);
  sc.tamper_chunk = std::move(options.tamper_chunk);
  sc.secret = std::move(options.secret);
  sc.counters = &n->counters_;
  n->impl_->service = n->impl_->system.spawn(node_service, sc);
  auto port = publish_node_service(n->impl_->service, listen.port, listen.host.c_str());
  if (!port) {
    const std::string why = n->impl_->system.render(port.error());
    n->shutdown();
    return make_error(errc::io_error, "cannot listen on " + listen.text() + ": " + why);
  }
  n->port_ = *port;
  return n;
}

prefill_node::~prefill_node() { shutdown(); }

void prefill_node::shutdown() {
  if (!impl_) return;
  caf::anon_send_exit(impl_->service, caf::exit_reason::user_shutdown);
  impl_->system.await_all_actors_done();
  impl_.reset();
}

}  // namespace fw::actors
