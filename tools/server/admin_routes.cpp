#include "tools/server/admin_routes.hpp"

#include <nlohmann/json.hpp>

namespace fw::server {

namespace {

using json = nlohmann::json;

http_response json_response(unsigned status, const json& j) {
  return {status, "application/json", j.dump(-1, ' ', false, json::error_handler_t::replace), {}};
}

http_response error_response(unsigned status, std::string message, std::string code = {}) {
  api_error e;
  e.status = status;
  e.message = std::move(message);
  e.code = std::move(code);
  if (status >= 500) e.type = "server_error";
  return {status, "application/json", e.body(), {}};
}

json plugin_rows(const plugin_host& host) {
  json rows = json::array();
  for (const plugin_info& p : host.list()) rows.push_back(json::parse(p.to_json()));
  return rows;
}

}  // namespace

http_response admin_routes::handle(const http_request& req, const std::string& path) {
  if (path == "/admin/health") {
    if (req.method != "GET") return error_response(405, "use GET on /admin/health");
    return health();
  }
  if (path == "/admin/plugins") {
    if (req.method != "GET") return error_response(405, "use GET on /admin/plugins");
    if (!opt_.plugins) return error_response(404, "this server has no plugin host");
    return json_response(200, {{"plugins", plugin_rows(*opt_.plugins)}});
  }
  const std::string prefix = "/admin/plugins/";
  if (path.rfind(prefix, 0) == 0) {
    const std::string rest = path.substr(prefix.size());
    const auto slash = rest.find('/');
    if (slash == std::string::npos || slash == 0 || rest.find('/', slash + 1) != std::string::npos)
      return error_response(404, "expected /admin/plugins/NAME/load|reload|unload");
    if (req.method != "POST") return error_response(405, "use POST on " + path);
    return plugin_action(rest.substr(0, slash), rest.substr(slash + 1));
  }
  return error_response(404, "no admin route " + path + " (routes: /admin/health, /admin/plugins, "
                        "/admin/plugins/NAME/load|reload|unload)", "not_found");
}

http_response admin_routes::health() {
  json j;
  j["status"] = "ok";
  j["uptime_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  if (auto st = engine_.stats()) {
    j["requests"] = {{"waiting", st->waiting}, {"prefilling", st->prefilling}, {"decoding", st->decoding},
                     {"completed", st->completed}, {"failed", st->failed}, {"requeued", st->requeued},
                     {"peak_waiting", st->peak_waiting}};
    j["kv_blocks"] = {{"used", st->kv_used_blocks}, {"total", st->kv_total_blocks}};
    j["worker_restarts"] = st->worker_restarts;
  } else {
    j["status"] = "degraded";
    j["error"] = st.err().what();
  }
  json kernels = json::array();
  for (const auto& k : engine_.device().kernel_paths())
    kernels.push_back({{"weight_type", k.weight_type}, {"path", k.path}, {"fallback", k.fallback}, {"note", k.note}});
  j["kernels"] = std::move(kernels);
  j["device"] = engine_.device().summary();
  j["draft"] = opt_.draft.empty() ? json(nullptr) : json(opt_.draft);
  j["plugins"] = opt_.plugins ? plugin_rows(*opt_.plugins) : json::array();
  return json_response(200, j);
}

http_response admin_routes::plugin_action(const std::string& name, const std::string& action) {
  if (!opt_.plugins) return error_response(404, "this server has no plugin host");
  bool configured = false;
  for (const auto& p : opt_.plugin_config.load) configured = configured || p.name == name;
  if (!configured)
    return error_response(404, "no [[plugins.load]] entry named \"" + name +
                                   "\" in the server's config (plugins are loaded by configured name only)",
                          "plugin_not_configured");
  plugin_host& host = *opt_.plugins;
  if (action == "load" || action == "reload") {
    auto r = action == "load" ? host.load_configured(opt_.plugin_config, name) : host.reload(name);
    if (!r) return error_response(409, action + " " + name + ": " + r.err().message, "plugin_refused");
    return json_response(200, {{"plugin", json::parse(r->to_json())}});
  }
  if (action == "unload") {
    if (auto r = host.unload(name); !r)
      return error_response(409, "unload " + name + ": " + r.err().message, "plugin_refused");
    return json_response(200, {{"plugins", plugin_rows(host)}});
  }
  return error_response(404, "unknown plugin action \"" + action + "\"; allowed: load, reload, unload");
}

}  // namespace fw::server
