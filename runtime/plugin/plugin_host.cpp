#include "runtime/plugin/plugin_host.hpp"

#include <algorithm>
#include <utility>

#include "runtime/plugin/plugin_adapters.hpp"
#include "runtime/plugin/plugin_library.hpp"

namespace fw {

namespace {

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

}  // namespace

plugin_host::plugin_host(plugin_host_options options)
    : copy_dir_(options.copy_dir.empty() ? plugin_library::default_copy_dir() : options.copy_dir) {
  plugin_library::remove_stale_copies(copy_dir_);
}

plugin_host::~plugin_host() = default;

plugin_info plugin_host::row_of(const std::string& name, const plugin_library& lib, plugin_state state) {
  plugin_info r;
  r.name = name;
  r.kind = lib.kind();
  r.version = lib.version();
  r.file = lib.file();
  r.state = state;
  r.users = lib.users();
  r.plugin_name = lib.table().name;
  r.loaded_copy = lib.copy();
  r.types = lib.types();
  return r;
}

void plugin_host::prune(entry& e) {
  std::erase_if(e.retired, [](const std::weak_ptr<plugin_library>& w) { return w.expired(); });
}

std::vector<error> plugin_host::load_all(const plugins_section& section) {
  std::vector<error> errors;
  for (const auto& p : section.load)
    if (auto r = load(p.name, section.file_of(p)); !r) errors.push_back(r.err());
  return errors;
}

expected<plugin_info> plugin_host::load_configured(const plugins_section& section, const std::string& name) {
  for (const auto& p : section.load)
    if (p.name == name) return load(p.name, section.file_of(p));
  return make_error(errc::invalid_argument, "no [[plugins.load]] entry named '" + name + "' in the config");
}

expected<plugin_info> plugin_host::load(const std::string& name, const std::string& file) {
  if (!valid_name(name))
    return make_error(errc::invalid_argument, "plugin name '" + name +
                                                  "' is not valid (1-64 letters, digits, '_', '-', '.')");
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(name);
    if (it != entries_.end() && it->second.current)
      return make_error(errc::invalid_argument, "plugin '" + name + "' is already loaded (from " +
                                                    it->second.current->file() + "); use reload");
  }
  auto lib = plugin_library::open(name, file, copy_dir_);
  std::lock_guard lock(mutex_);
  entry& e = entries_[name];
  if (e.current)  // a concurrent load of the same name won
    return make_error(errc::invalid_argument, "plugin '" + name + "' is already loaded; use reload");
  e.file = file;
  if (!lib) {
    e.error = lib.err().message;
    return lib.err();
  }
  e.error.clear();
  e.current = std::move(*lib);
  e.version_id = next_version_id_++;
  changes_.fetch_add(1, std::memory_order_acq_rel);
  return row_of(name, *e.current, plugin_state::loaded);
}

uint64_t plugin_host::version_id(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(name);
  return it != entries_.end() && it->second.current ? it->second.version_id : 0;
}

expected<void> plugin_host::unload(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(name);
  if (it == entries_.end() || (!it->second.current && it->second.error.empty()))
    return make_error(errc::invalid_argument, "no plugin named '" + name + "' is loaded");
  entry& e = it->second;
  // Dropping the host's reference dlcloses the library right here when no object holds it.
  if (e.current) e.retired.push_back(std::exchange(e.current, nullptr));
  e.version_id = 0;
  changes_.fetch_add(1, std::memory_order_acq_rel);
  e.error.clear();
  prune(e);
  if (e.retired.empty()) entries_.erase(it);
  return {};
}

expected<plugin_info> plugin_host::reload(const std::string& name) {
  std::string file;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(name);
    if (it == entries_.end() || (!it->second.current && it->second.error.empty()))
      return make_error(errc::invalid_argument, "no plugin named '" + name + "' to reload");
    file = it->second.file;
  }
  auto lib = plugin_library::open(name, file, copy_dir_);
  std::lock_guard lock(mutex_);
  entry& e = entries_[name];  // recreated if unloaded meanwhile
  e.file = file;
  if (!lib) {
    if (!e.current) e.error = lib.err().message;  // a failed row stays failed
    return make_error(lib.err().code, lib.err().message +
                                          (e.current ? " (version " + e.current->version() + " keeps serving)" : ""));
  }
  if (e.current) e.retired.push_back(std::exchange(e.current, nullptr));
  prune(e);
  e.error.clear();
  e.current = std::move(*lib);
  e.version_id = next_version_id_++;
  changes_.fetch_add(1, std::memory_order_acq_rel);
  return row_of(name, *e.current, plugin_state::loaded);
}

std::vector<plugin_info> plugin_host::list() const {
  std::vector<plugin_info> rows;
  std::lock_guard lock(mutex_);
  for (const auto& [name, e] : entries_) {
    if (e.current) {
      rows.push_back(row_of(name, *e.current, plugin_state::loaded));
    } else if (!e.error.empty()) {
      plugin_info r;
      r.name = name;
      r.file = e.file;
      r.state = plugin_state::failed;
      r.error = e.error;
      rows.push_back(std::move(r));
    }
    for (const auto& w : e.retired)
      if (auto lib = w.lock()) rows.push_back(row_of(name, *lib, plugin_state::unloading));
  }
  return rows;
}

std::optional<plugin_info> plugin_host::find(const std::string& name) const {
  for (auto& r : list())
    if (r.name == name && r.state != plugin_state::unloading) return r;
  return std::nullopt;
}

std::shared_ptr<plugin_library> plugin_host::current_of(const std::string& name, error& err) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(name);
  if (it == entries_.end() || !it->second.current) {
    err = make_error(errc::invalid_argument,
                     "no plugin named '" + name + "' is loaded" +
                         (it != entries_.end() && !it->second.error.empty() ? " (" + it->second.error + ")" : ""));
    return nullptr;
  }
  return it->second.current;
}

expected<std::shared_ptr<draft_plugin>> plugin_host::create_draft(const std::string& name,
                                                                  const draft_options& options) {
  error err;
  auto lib = current_of(name, err);
  if (!lib) return err;
  return make_draft_plugin(std::move(lib), options);
}

expected<std::shared_ptr<quant_kernel>> plugin_host::create_quant_kernel(const std::string& name,
                                                                                const std::string& params_json) {
  error err;
  auto lib = current_of(name, err);
  if (!lib) return err;
  return make_quant_kernel(std::move(lib), params_json);
}

expected<std::shared_ptr<telemetry_feed>> plugin_host::create_telemetry_source(const std::string& name,
                                                                              const std::string& params_json) {
  error err;
  auto lib = current_of(name, err);
  if (!lib) return err;
  return make_telemetry_source(std::move(lib), params_json);
}

expected<plugin_info> plugin_host::check(const std::string& file, const plugin_host_options& options) {
  const std::string dir = options.copy_dir.empty() ? plugin_library::default_copy_dir() : options.copy_dir;
  // The name only labels the copy: lib<x>.so -> x.
  std::string name = file.substr(file.find_last_of('/') + 1);
  if (name.rfind("lib", 0) == 0) name = name.substr(3);
  if (auto dot = name.find('.'); dot != std::string::npos) name = name.substr(0, dot);
  if (!valid_name(name)) name = "checked";
  auto lib = plugin_library::open(name, file, dir);
  if (!lib) return lib.err();
  auto self = (*lib)->create("{}");
  if (!self) return self.err();
  (*lib)->destroy(*self);
  return row_of(name, **lib, plugin_state::loaded);
}

}  // namespace fw
