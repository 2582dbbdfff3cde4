#include "runtime/plugin/plugin_info.hpp"

#include <cstddef>
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

/// Length of the well-formed UTF-8 sequence at s[i] (Unicode's table of well-formed byte
/// sequences: no overlong forms, no surrogates, nothing past U+10FFFF), 0 when there is none.
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) -> unsigned { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const unsigned c = b(0);
  const auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) { return b(k) >= lo && b(k) <= hi; };
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c == 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c == 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

/// A JSON string literal of s. A plugin's name, version and error (dlerror() names files) are
/// arbitrary bytes: a byte that is not part of well-formed UTF-8 becomes U+FFFD, so the result
/// is always valid JSON.
std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80) {
      if (const size_t n = utf8_sequence(s, i); n > 0) {
        out.append(s.substr(i, n));
        i += n - 1;
      } else {
        out += "\\ufffd";
      }
      continue;
    }
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
