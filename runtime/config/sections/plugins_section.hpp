// plugins_section: [plugins] and its [[plugins.load]] entries, the plugins loaded at start-up
// (never from a path sent by a remote client). Read by runtime/plugin's host.
// Thread-safety: plain value.
#pragma once

#include <string>
#include <vector>

namespace fw {

/// One [[plugins.load]] entry.
struct plugin_load {
  std::string name;  ///< the name the runtime and console use; unique
  std::string path;  ///< the .so file; empty: <plugins.dir>/lib<name>.so
  bool operator==(const plugin_load&) const = default;
};

struct plugins_section {
  std::string dir = "build/plugins";
  std::vector<plugin_load> load;

  /// The file of p: p.path, or <dir>/lib<name>.so when empty.
  [[nodiscard]] std::string file_of(const plugin_load& p) const {
    if (!p.path.empty()) return p.path;
    return (dir.empty() || dir.back() == '/' ? dir : dir + "/") + "lib" + p.name + ".so";
  }
  bool operator==(const plugins_section&) const = default;
};

}  // namespace fw
