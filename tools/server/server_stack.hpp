// server_stack: the OpenAI-compatible server over a running engine, as `flywheel serve` runs it:
// openai_service ([server] model name, API key or FLYWHEEL_API_KEY, retry-after; [sampling]
// defaults; [alerts]; the admin routes over the parts' plugin host) behind http_server ([server]
// body, timeout and connection limits) on host:port. `flywheel serve` and `flywheel bench soak`
// start it the same way.
// Thread-safety: start and destroy from one thread; the service and server are thread-safe.
#pragma once

#include <memory>
#include <string>

#include "actors/engine.hpp"
#include "runtime/base/expected.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "tools/server/http_server.hpp"
#include "tools/server/openai_service.hpp"

namespace fw::server {

struct server_stack {
  service_options options;  ///< what the service was built with (model name, API key, ...)
  std::unique_ptr<openai_service> service;
  std::unique_ptr<http_server> http;  ///< listening; http->port() is the bound port

  /// Serves parts.cfg's [server] on host:port (port 0: any free one) over `engine`, which must
  /// outlive the stack.
  [[nodiscard]] static expected<std::unique_ptr<server_stack>> start(actors::engine& engine, const runtime_parts& parts,
                                                                     const std::string& host, uint16_t port);
};

}  // namespace fw::server
