#include "tools/server/admin_routes.hpp"

#include <nlohmann/json.hpp>

#include "runtime/supervise/rollout_breaker.hpp"
#include "runtime/supervise/telemetry_trace.hpp"

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
  if (path == "/admin/rollout") {
    if (req.method != "GET") return error_response(405, "use GET on /admin/rollout");
    return rollout();
  }
  if (path == "/admin/drill") {
    if (req.method != "POST") return error_response(405, "use POST on /admin/drill");
    return drill(req);
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
  return error_response(404, "no admin route " + path + " (routes: /admin/health, /admin/rollout, /admin/drill, "
                        "/admin/plugins, /admin/plugins/NAME/load|reload|unload)", "not_found");
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
  if (auto h = engine_.health()) {
    json workers = json::array();
    for (size_t i = 0; i < h->names.size(); ++i)
      workers.push_back({{"name", h->names[i]}, {"state", h->states[i]}, {"crashes", h->crashes[i]},
                         {"marked_down", h->escalations[i]}, {"last_reason", h->last_reason[i]}});
    json readings = json::array();
    for (const auto& r : h->readings) readings.push_back({{"device", r.device}, {"metric", r.metric}, {"value", r.value}});
    j["supervisor"] = {{"workers", std::move(workers)},
                       {"degradation", h->degradation},
                       {"degradation_reason", h->degradation_reason},
                       {"transitions_total", h->transitions_total},
                       {"transitions", h->transitions},
                       {"telemetry", std::move(readings)},
                       {"telemetry_source", h->telemetry}};
    if (h->degradation != "healthy" && j["status"] == "ok") j["status"] = "degraded";
  }
  return json_response(200, j);
}

http_response admin_routes::rollout() {
  auto st = engine_.stats();
  if (!st) return error_response(503, st.err().what());
  json j;
  j["enabled"] = st->rollout_stage > 0;
  if (st->rollout_stage == 0) return json_response(200, j);
  j["stage"] = st->rollout_stage;
  j["stage_name"] = rollout_stage_name(st->rollout_stage);
  j["share"] = st->rollout_share;
  j["decisions_total"] = st->rollout_decisions;
  j["decisions"] = st->rollout_log;
  json stages = json::array();
  for (size_t i = 0; i < st->rollout_requests.size(); ++i)
    stages.push_back({{"stage", i + 1},
                      {"name", rollout_stage_name(static_cast<uint32_t>(i + 1))},
                      {"requests", st->rollout_requests[i]},
                      {"p99_ms_per_token", st->rollout_p99_ms[i]},
                      {"error_rate", st->rollout_error_rate[i]},
                      {"draft_failure_rate", st->rollout_draft_failure[i]}});
  j["stages"] = std::move(stages);
  return json_response(200, j);
}

http_response admin_routes::drill(const http_request& req) {
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    return error_response(400, "the body must be a JSON object: {\"trace\": \"<CSV>\", \"speed\": 1}");
  if (!body.contains("trace") || !body["trace"].is_string())
    return error_response(400, "\"trace\" must be a string: CSV lines of time_s,device,metric,value");
  double speed = 1;
  if (body.contains("speed")) {
    if (!body["speed"].is_number() || !(body["speed"].get<double>() > 0) || body["speed"].get<double>() > 1e6)
      return error_response(400, "\"speed\" must be a number above 0 (times the trace's own pace)");
    speed = body["speed"].get<double>();
  }
  auto trace = parse_telemetry_trace(body["trace"].get<std::string>(), "trace");
  if (!trace) return error_response(400, trace.err().message);
  const size_t n = trace->size();
  const double span = trace->back().t_s - trace->front().t_s;
  if (auto ok = engine_.drill(std::move(*trace), speed); !ok) return error_response(409, ok.err().message);
  return json_response(202, {{"samples", n}, {"span_s", span}, {"speed", speed}, {"plays_for_s", span / speed}});
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
