// admin_routes: the server's operator endpoints, only with the API key ([server] api_key; without
// a key they answer 403, so an open server never exposes them):
//   GET  /admin/health                    engine state (queue, running, KV blocks, restarts),
//                                          plugins, kernel paths, draft, uptime, and the
//                                          supervisor's view (workers, degradation, telemetry)
//   GET  /admin/rollout                   the staged rollout: stage, share, per-stage window, decisions
//   POST /admin/drill                     {"trace": "<CSV time_s,device,metric,value>", "speed": 10}:
//                                          replays a telemetry trace into the running runtime
//   GET  /admin/plugins                   the plugin registry (as `flywheel plugins`)
//   POST /admin/plugins/NAME/load|reload|unload
// NAME must be a [[plugins.load]] entry of the server's config: the file comes from the config,
// never from the request. A failing load or reload is a 409 naming why, and the current version
// keeps serving (plugin_host's rule).
// Thread-safety: called on the HTTP I/O thread; the plugin host and engine are thread-safe.
#pragma once

#include <chrono>
#include <string>

#include "actors/engine.hpp"
#include "runtime/config/sections/plugins_section.hpp"
#include "runtime/plugin/plugin_host.hpp"
#include "tools/server/api_error.hpp"
#include "tools/server/http_server.hpp"

namespace fw::server {

struct admin_options {
  plugin_host* plugins = nullptr;  ///< null: no plugin host (routes answer 404 for plugins)
  plugins_section plugin_config;
  std::string draft;               ///< the configured draft's name, "" when none
};

class admin_routes {
 public:
  admin_routes(actors::engine& engine, admin_options options)
      : engine_(engine), opt_(std::move(options)), started_(std::chrono::steady_clock::now()) {}

  /// The response of an /admin/* request (authorization already checked).
  http_response handle(const http_request& req, const std::string& path);

 private:
  http_response health();
  http_response rollout();
  http_response drill(const http_request& req);
  http_response plugin_action(const std::string& name, const std::string& action);

  actors::engine& engine_;
  admin_options opt_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace fw::server
