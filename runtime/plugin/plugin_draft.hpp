// draft_plugin: a drafter (runtime/drafter.hpp) that came from a plugin, so the engine holds plugin
// drafts and built-in drafts through one interface. Objects are handed out by plugin_host as
// std::shared_ptr; each keeps its plugin library loaded until it is destroyed, so a sequence that
// started on one version finishes on it even if the plugin is reloaded meanwhile.
// Thread-safety: as drafter, one caller at a time per object.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/spec/drafts/drafter.hpp"

namespace fw {

/// How to create a draft object from a plugin.
struct draft_options {
  std::string params_json = "{}";  ///< passed to the plugin's create() (e.g. {"n": 3})
  /// The target's vocabulary size: when > 0 and the plugin produces probabilities
  /// (FW_DRAFT_PROBS), propose() returns them; otherwise proposals are one-hot (empty probs).
  int32_t n_vocab = 0;
};

class draft_plugin : public drafter {
 public:
  /// The plugin's version string (what the registry shows for the library this object uses).
  [[nodiscard]] virtual std::string version() const = 0;
  /// The file this object's library was loaded from (the config's path, not the unique copy).
  [[nodiscard]] virtual std::string file() const = 0;
};

}  // namespace fw
