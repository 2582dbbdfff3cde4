// plugin_info: what the plugin host's registry reports about one loaded (or refused) plugin:
// the rows of `:plugins` and `flywheel plugins`. Thread-safety: plain value types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fw {

/// What a plugin provides (the SDK's FW_PLUGIN_* kinds).
enum class plugin_kind : uint32_t {
  unknown = 0,       ///< not known yet (the plugin failed before its table was read)
  quant_kernel = 1,  ///< matrix kernels for weight formats (fw_quant_kernel_v1)
  draft_model = 2,   ///< speculative-decoding drafts (fw_draft_model_v1)
  telemetry_source = 4,  ///< device and link health readings (fw_telemetry_source_v1)
};

/// Where a registry entry stands.
enum class plugin_state {
  loaded,     ///< the current version of its name; new objects come from it
  unloading,  ///< unloaded or replaced by a reload; lives on until its last object is destroyed
  failed,     ///< refused at load; `error` says why
};

const char* to_string(plugin_kind kind);
const char* to_string(plugin_state state);

/// One registry row.
struct plugin_info {
  std::string name;         ///< the name given by the config (the registry key)
  plugin_kind kind = plugin_kind::unknown;
  std::string version;      ///< the plugin's version string
  std::string file;         ///< the file named by the config
  plugin_state state = plugin_state::failed;
  int64_t users = 0;        ///< objects created from this version and still alive
  std::string plugin_name;  ///< the name in the plugin's own table
  std::string loaded_copy;  ///< the unique copy that was dlopen'ed (empty when failed)
  std::vector<uint32_t> types;  ///< quant_kernel: ggml type ids it handles
  std::string error;        ///< failed: why it was refused

  /// One line: "name kind version file state users".
  [[nodiscard]] std::string to_line() const;
  /// A JSON object with the keys name, kind, version, file, state, users (plus error if any), in
  /// that order; ill-formed UTF-8 in its strings becomes U+FFFD.
  [[nodiscard]] std::string to_json() const;
};

/// A JSON array of to_json() objects.
std::string to_json(const std::vector<plugin_info>& infos);

}  // namespace fw
