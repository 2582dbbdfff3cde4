// plugin_host: loads quant_kernel and draft_model plugins (include/flywheel/plugin_sdk.h) by
// name, keeps the registry (`:plugins`, `flywheel plugins`), and hands out plugin objects.
//
// Plugins come from the config only ([plugins] dir, [[plugins.load]] name/path): load_all() and
// load_configured() take a plugins_section; load(name, file) is for start-up code and tests and
// must never be given a path that came from a remote client.
//
// A bad plugin (missing file, not a shared library, missing entry symbol, wrong ABI, unknown kind,
// probe refusal, failing create) is an error naming the file and the reason; it is recorded as a
// `failed` row and the host keeps serving every other plugin.
//
// Hot reload: each load dlopens a fresh unique copy of the file (plugin_library), so reload(name)
// after the file was rebuilt gets the new code. Objects are std::shared_ptr that keep their
// library loaded: objects created before a reload finish on the old version (its row shows
// `unloading` with its users), objects created after get the new one, and the old library is
// dlclosed and its copy deleted when its last object is destroyed. unload(name) works the same
// way without a successor.
//
// Thread-safety: every member is safe to call from any thread (one mutex guards the registry;
// loading and plugin create() run outside it). Objects may outlive the host.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/plugin/plugin_draft.hpp"
#include "runtime/plugin/plugin_info.hpp"
#include "runtime/device/quant_kernel.hpp"
#include "runtime/config/sections/plugins_section.hpp"
#include "runtime/supervise/telemetry_feed.hpp"

namespace fw {

class plugin_library;

struct plugin_host_options {
  /// Where unique copies are loaded from; empty: <temp dir>/flywheel-plugins.
  std::string copy_dir;
};

class plugin_host {
 public:
  explicit plugin_host(plugin_host_options options = {});
  ~plugin_host();
  plugin_host(const plugin_host&) = delete;
  plugin_host& operator=(const plugin_host&) = delete;

  // -- loading --

  /// Loads every [[plugins.load]] entry; returns the errors of those refused (the rest load).
  std::vector<error> load_all(const plugins_section& section);
  /// Loads the [[plugins.load]] entry called `name` (its file: section.file_of(entry)).
  expected<plugin_info> load_configured(const plugins_section& section, const std::string& name);
  /// Loads `file` under `name` (letters, digits, '_', '-', '.'). An error when the name is
  /// already loaded (use reload) or the plugin is refused; a refusal also leaves a failed row.
  expected<plugin_info> load(const std::string& name, const std::string& file);
  /// Retires the current version of `name`: new objects can no longer be created; existing ones
  /// keep working and the library unloads when the last one is destroyed. Also clears a failed row.
  expected<void> unload(const std::string& name);
  /// Loads `name`'s file again (a fresh copy, so a rebuilt file gives new code) and makes it the
  /// current version; the previous version is retired as by unload(). On error the previous
  /// version stays current and keeps serving.
  expected<plugin_info> reload(const std::string& name);

  // -- registry --

  /// One row per name (its current or failed version) plus one per retired version that still
  /// has users, sorted by name (current first).
  [[nodiscard]] std::vector<plugin_info> list() const;
  /// The current (or failed) row of name.
  [[nodiscard]] std::optional<plugin_info> find(const std::string& name) const;

  // -- versions (for objects that follow reloads: plugin/kinds) --

  /// An id of the current version of `name`, new for every load and reload; 0 when nothing is
  /// loaded under that name.
  [[nodiscard]] uint64_t version_id(const std::string& name) const;
  /// Grows whenever any load, reload or unload happens (a cheap check before version_id()).
  [[nodiscard]] uint64_t changes() const { return changes_.load(std::memory_order_acquire); }

  // -- objects --

  /// A draft object from the current version of `name` (a draft_model plugin).
  expected<std::shared_ptr<draft_plugin>> create_draft(const std::string& name, const draft_options& options = {});
  /// A kernel object from the current version of `name` (a quant_kernel plugin).
  expected<std::shared_ptr<quant_kernel>> create_quant_kernel(const std::string& name,
                                                                     const std::string& params_json = "{}");
  /// A telemetry feed from the current version of `name` (a telemetry_source plugin). It keeps
  /// its version alive; a reload applies to feeds created after it.
  expected<std::shared_ptr<telemetry_feed>> create_telemetry_source(const std::string& name,
                                                                    const std::string& params_json = "{}");

  // -- validation --

  /// Everything load() checks, plus one create("{}")/destroy() round trip, on a file; nothing
  /// stays loaded. The row (state loaded) when the file would be accepted, else why not.
  static expected<plugin_info> check(const std::string& file, const plugin_host_options& options = {});

 private:
  struct entry {
    std::string file;
    std::shared_ptr<plugin_library> current;  ///< null: failed (or unloaded, still draining)
    uint64_t version_id = 0;                  ///< of current
    std::string error;                        ///< why the last load failed (current == null)
    std::vector<std::weak_ptr<plugin_library>> retired;
  };

  std::shared_ptr<plugin_library> current_of(const std::string& name, error& err) const;
  static plugin_info row_of(const std::string& name, const plugin_library& lib, plugin_state state);
  static void prune(entry& e);

  std::string copy_dir_;
  mutable std::mutex mutex_;
  std::map<std::string, entry> entries_;  // guarded by mutex_
  uint64_t next_version_id_ = 1;          // guarded by mutex_
  std::atomic<uint64_t> changes_{0};
};

}  // namespace fw
