// plugin_library: one plugin file opened for use. The file is first copied to a unique name
// (<copy_dir>/lib<name>.<pid>.<n>.so) and the copy is dlopen'ed (Boost.DLL), so that a rebuilt
// file at the same path is a new library to the dynamic loader (dlopen of a path still open
// returns the old code) and replacing the original never touches mapped pages. Then the entry
// table is validated: entry symbol, ABI version, kind, required functions, probe. Every refusal
// is an fw::error whose message names the file and the reason.
//
// Ownership: held by std::shared_ptr — by the host's registry while it is the current version,
// and by every object created from it. The destructor dlcloses the copy and deletes it, so the
// code leaves the process (/proc/self/maps) when the last holder lets go.
// Thread-safety: all members are safe to call concurrently; create()/destroy() forward to the
// plugin (see the SDK for what plugins guarantee).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "include/flywheel/plugin_sdk.h"
#include "runtime/base/expected.hpp"
#include "runtime/plugin/plugin_info.hpp"

namespace fw {

class plugin_library {
 public:
  /// Copies `file`, loads the copy and validates its table. `name` is the registry name (used
  /// in the copy's file name and in messages). On error nothing stays loaded or copied.
  static expected<std::shared_ptr<plugin_library>> open(const std::string& name,
                                                        const std::string& file,
                                                        const std::string& copy_dir);

  /// <temp dir>/flywheel-plugins ($TMPDIR, else /tmp).
  static std::string default_copy_dir();
  /// Deletes copies left in copy_dir by processes that no longer exist (after a crash).
  static void remove_stale_copies(const std::string& copy_dir);

  ~plugin_library();
  plugin_library(const plugin_library&) = delete;
  plugin_library& operator=(const plugin_library&) = delete;

  [[nodiscard]] const fw_plugin_v1& table() const { return *table_; }
  /// quant_kernel for both kernel table versions.
  [[nodiscard]] plugin_kind kind() const {
    return table_->kind == FW_PLUGIN_QUANT_KERNEL_V2 ? plugin_kind::quant_kernel : static_cast<plugin_kind>(table_->kind);
  }
  /// A quant_kernel with the v2 table (fw_quant_kernel_v2).
  [[nodiscard]] bool kernel_v2() const { return table_->kind == FW_PLUGIN_QUANT_KERNEL_V2; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] const std::string& copy() const { return copy_; }
  [[nodiscard]] std::string version() const { return table_->version; }
  [[nodiscard]] std::vector<uint32_t> types() const;

  /// Objects created from this library and not yet destroyed.
  [[nodiscard]] int64_t users() const { return users_.load(std::memory_order_relaxed); }

  /// Calls the plugin's create() (guarded: a NULL result or an exception becomes an error naming
  /// the file). The caller owns the result and must pass it to destroy() exactly once.
  expected<void*> create(const std::string& params_json);
  /// Calls the plugin's destroy() (exceptions are swallowed).
  void destroy(void* self) noexcept;

  /// "plugin 'name' (file)": the prefix of every message about this library.
  [[nodiscard]] std::string describe() const;
  /// An error for a failed call of a kind-table function: names the plugin, the function and
  /// the FW_PLUGIN_E_* code.
  [[nodiscard]] error call_error(const char* function, int code) const;

 private:
  struct impl;
  plugin_library(std::string name, std::string file, std::string copy);

  std::string name_;
  std::string file_;
  std::string copy_;
  std::unique_ptr<impl> impl_;
  const fw_plugin_v1* table_ = nullptr;
  std::atomic<int64_t> users_{0};
};

/// The text of an FW_PLUGIN_E_* code.
const char* plugin_code_name(int code);

}  // namespace fw
