#include "tools/server/server_stack.hpp"

#include <cstdlib>
#include <filesystem>

namespace fw::server {

expected<std::unique_ptr<server_stack>> server_stack::start(actors::engine& engine, const runtime_parts& parts,
                                                            const std::string& host, uint16_t port) {
  const server_section& srv = parts.cfg.server;
  auto s = std::make_unique<server_stack>();
  service_options& so = s->options;
  so.model_name = srv.model_name.empty() ? std::filesystem::path(parts.cfg.model.path).stem().string() : srv.model_name;
  so.api_key = srv.api_key;
  if (so.api_key.empty())
    if (const char* env = std::getenv("FLYWHEEL_API_KEY")) so.api_key = env;
  so.n_ctx = parts.n_ctx;
  so.retry_after_s = srv.retry_after_s;
  so.defaults = sampling_params::from_section(parts.cfg.sampling);
  if (auto ok = so.defaults.validate(); !ok) return make_error(ok.err().code, "[sampling]: " + ok.err().message);
  so.alerts = parts.cfg.alerts;
  so.admin.plugins = parts.plugins.get();
  so.admin.plugin_config = parts.cfg.plugins;
  if (parts.draft) so.admin.draft = parts.draft->name();

  auto* stack = s.get();  // heap-held: the service's post hook may keep this pointer
  s->service = std::make_unique<openai_service>(engine, so, [stack](std::function<void()> f) { stack->http->post(std::move(f)); });
  http_limits limits;
  limits.max_body = size_t{srv.max_body_kib} * 1024;
  limits.read_timeout_s = srv.read_timeout_s;
  limits.idle_timeout_s = srv.idle_timeout_s;
  limits.write_timeout_s = srv.write_timeout_s;
  limits.max_connections = srv.max_connections;
  limits.tls_cert = srv.tls_cert;
  limits.tls_key = srv.tls_key;
  auto* service = s->service.get();
  auto started = http_server::start(host, port, limits, [service](http_request req, std::shared_ptr<reply_channel> reply) {
    service->handle(std::move(req), std::move(reply));
  });
  if (!started) return started.err();
  s->http = std::move(*started);
  return s;
}

}  // namespace fw::server
