// plugin_params: reads flat parameters ({"n": 3, "simd": "avx2"}) from the params_json that
// create() receives, for the plugins in this tree. Enough for flat objects of numbers and strings;
// a plugin that needs more brings a JSON library. Header-only, no exceptions.
#pragma once

#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace fw_plugin {

/// The raw text of key's value ("3", "\"avx2\"" unquoted to "avx2"), or nullopt when absent.
inline std::optional<std::string> param(std::string_view json, std::string_view key) {
  const std::string quoted = "\"" + std::string(key) + "\"";
  size_t at = json.find(quoted);
  if (at == std::string_view::npos) return std::nullopt;
  at = json.find(':', at + quoted.size());
  if (at == std::string_view::npos) return std::nullopt;
  ++at;
  while (at < json.size() && std::isspace(static_cast<unsigned char>(json[at]))) ++at;
  if (at < json.size() && json[at] == '"') {
    const size_t end = json.find('"', at + 1);
    if (end == std::string_view::npos) return std::nullopt;
    return std::string(json.substr(at + 1, end - at - 1));
  }
  size_t end = at;
  while (end < json.size() && json[end] != ',' && json[end] != '}' &&
         !std::isspace(static_cast<unsigned char>(json[end])))
    ++end;
  if (end == at) return std::nullopt;
  return std::string(json.substr(at, end - at));
}

/// key's value as an integer; fallback when absent; nullopt when present but not an integer.
inline std::optional<long> int_param(std::string_view json, std::string_view key, long fallback) {
  auto v = param(json, key);
  if (!v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v->c_str(), &end, 10);
  if (end == v->c_str() || *end != '\0') return std::nullopt;
  return n;
}

}  // namespace fw_plugin
