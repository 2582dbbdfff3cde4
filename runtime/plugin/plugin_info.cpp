#include "runtime/plugin/plugin_info.hpp"

#include <nlohmann/json.hpp>

namespace fw {

const char* to_string(plugin_kind kind) {
  switch (kind) {
    case plugin_kind::quant_kernel: return "quant_kernel";
    case plugin_kind::draft_model: return "draft_model";
    case plugin_kind::telemetry_source: return "telemetry_source";
    case plugin_kind::unknown: break;
  }
  return "unknown";
}

const char* to_string(plugin_state state) {
  switch (state) {
    case plugin_state::loaded: return "loaded";
    case plugin_state::unloading: return "unloading";
    case plugin_state::failed: return "failed";
  }
  return "failed";
}

std::string plugin_info::to_line() const {
  std::string line = name + " " + to_string(kind) + " " + (version.empty() ? "-" : version) + " " +
                     file + " " + to_string(state) + " " + std::to_string(users);
  if (!error.empty()) line += "  (" + error + ")";
  return line;
}

namespace {

/// The row in to_json()'s key order.
nlohmann::ordered_json json_row(const plugin_info& p) {
  nlohmann::ordered_json j{{"name", p.name}, {"kind", to_string(p.kind)},   {"version", p.version},
                           {"file", p.file}, {"state", to_string(p.state)}, {"users", p.users}};
  if (!p.error.empty()) j["error"] = p.error;
  return j;
}

// A plugin's name, version and error (dlerror() names files) are arbitrary bytes: ill-formed
// UTF-8 becomes U+FFFD, so the text is always valid JSON.
std::string dump(const nlohmann::ordered_json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace

std::string plugin_info::to_json() const { return dump(json_row(*this)); }

std::string to_json(const std::vector<plugin_info>& infos) {
  auto rows = nlohmann::ordered_json::array();
  for (const auto& p : infos) rows.push_back(json_row(p));
  return dump(rows);
}

}  // namespace fw
