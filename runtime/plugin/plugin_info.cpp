#include "runtime/plugin/plugin_info.hpp"

#include <cstdio>

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

namespace {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", u);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

std::string plugin_info::to_line() const {
  std::string line = name + " " + to_string(kind) + " " + (version.empty() ? "-" : version) + " " +
                     file + " " + to_string(state) + " " + std::to_string(users);
  if (!error.empty()) line += "  (" + error + ")";
  return line;
}

std::string plugin_info::to_json() const {
  std::string j = "{\"name\":" + json_string(name) + ",\"kind\":" + json_string(to_string(kind)) +
                  ",\"version\":" + json_string(version) + ",\"file\":" + json_string(file) +
                  ",\"state\":" + json_string(to_string(state)) + ",\"users\":" + std::to_string(users);
  if (!error.empty()) j += ",\"error\":" + json_string(error);
  return j + "}";
}

std::string to_json(const std::vector<plugin_info>& infos) {
  std::string j = "[";
  for (size_t i = 0; i < infos.size(); ++i) j += (i ? "," : "") + infos[i].to_json();
  return j + "]";
}

}  // namespace fw
