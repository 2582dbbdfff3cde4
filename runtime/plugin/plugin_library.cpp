#include "runtime/plugin/plugin_library.hpp"

// Boost.DLL with std::filesystem, so that nothing links Boost.Filesystem.
#define BOOST_DLL_USE_STD_FS 1
#include <dlfcn.h>
#include <unistd.h>

#include <boost/dll/shared_library.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "runtime/plugin/plugin_table.hpp"

namespace fw {

namespace fs = std::filesystem;

struct plugin_library::impl {
  boost::dll::shared_library lib;
};

namespace {

std::atomic<uint64_t> next_copy{0};

std::string prefix(const std::string& name, const std::string& file) {
  return "plugin '" + name + "' (" + file + ")";
}

/// Empty when the file starts like an ELF shared object; otherwise why not.
std::string elf_problem(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  unsigned char head[18] = {};
  in.read(reinterpret_cast<char*>(head), sizeof head);
  if (in.gcount() < static_cast<std::streamsize>(sizeof head) ||
      std::memcmp(head, "\x7f" "ELF", 4) != 0)
    return "not a shared library (no ELF header)";
  const unsigned e_type = head[5] == 2 ? (head[16] << 8 | head[17]) : (head[17] << 8 | head[16]);
  if (e_type != 3) return "not a shared library (an ELF file of type " + std::to_string(e_type) + ", not ET_DYN)";
  return {};
}

}  // namespace

const char* plugin_code_name(int code) {
  switch (code) {
    case FW_PLUGIN_OK: return "ok";
    case FW_PLUGIN_E_INVALID: return "invalid argument";
    case FW_PLUGIN_E_UNSUPPORTED: return "unsupported";
    case FW_PLUGIN_E_NOMEM: return "out of memory";
    case FW_PLUGIN_E_STATE: return "call out of order";
    case FW_PLUGIN_E_INTERNAL: return "internal error";
    default: return "unknown error code";
  }
}

std::string plugin_library::default_copy_dir() {
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  return (tmp / "flywheel-plugins").string();
}

void plugin_library::remove_stale_copies(const std::string& copy_dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(copy_dir, ec)) {
    // lib<name>.<pid>.<n>.so: the pid is the second field from the end before ".so".
    const std::string f = e.path().filename().string();
    if (f.size() < 4 || f.compare(f.size() - 3, 3, ".so") != 0) continue;
    const std::string stem = f.substr(0, f.size() - 3);
    const auto last = stem.rfind('.');
    if (last == std::string::npos || last == 0) continue;
    const auto before = stem.rfind('.', last - 1);
    if (before == std::string::npos) continue;
    const std::string pid = stem.substr(before + 1, last - before - 1);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::stol(pid) == static_cast<long>(::getpid())) continue;
    if (fs::exists("/proc/" + pid, ec)) continue;
    fs::remove(e.path(), ec);
  }
}

plugin_library::plugin_library(std::string name, std::string file, std::string copy)
    : name_(std::move(name)), file_(std::move(file)), copy_(std::move(copy)), impl_(std::make_unique<impl>()) {}

plugin_library::~plugin_library() {
  if (impl_) {
    table_ = nullptr;
    impl_->lib.unload();  // dlclose: the last reference to the copy goes away here
  }
  std::error_code ec;
  if (!copy_.empty()) fs::remove(copy_, ec);
}

expected<std::shared_ptr<plugin_library>> plugin_library::open(const std::string& name,
                                                               const std::string& file,
                                                               const std::string& copy_dir) {
  const std::string where = prefix(name, file);
  auto fail = [&](errc code, const std::string& why) { return make_error(code, where + ": " + why); };

  std::error_code ec;
  if (!fs::exists(file, ec)) return fail(errc::io_error, "no such file");
  if (!fs::is_regular_file(file, ec)) return fail(errc::io_error, "not a regular file");
  if (auto why = elf_problem(file); !why.empty()) return fail(errc::malformed_file, why);

  fs::create_directories(copy_dir, ec);
  const std::string copy = (fs::path(copy_dir) / ("lib" + name + "." + std::to_string(::getpid()) +
                                                 "." + std::to_string(next_copy++) + ".so")).string();
  // Copy under a temporary name, then rename: the final name never holds a partial file.
  const std::string partial = copy + ".part";
  if (!fs::copy_file(file, partial, fs::copy_options::overwrite_existing, ec))
    return fail(errc::io_error, "cannot copy to " + partial + ": " + ec.message());
  fs::rename(partial, copy, ec);
  if (ec) {
    fs::remove(partial, ec);
    return fail(errc::io_error, "cannot rename the copy to " + copy + ": " + ec.message());
  }

  std::shared_ptr<plugin_library> lib(new plugin_library(name, file, copy));
  boost::dll::fs::error_code load_ec;
  ::dlerror();  // clear
  lib->impl_->lib.load(copy, load_ec, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  if (load_ec || !lib->impl_->lib.is_loaded()) {
    const char* dl = ::dlerror();
    std::string why = dl ? dl : load_ec.message();
    // dlerror names the copy; say which file that is.
    return fail(errc::malformed_file, "cannot be loaded: " + why);
  }
  if (!lib->impl_->lib.has(FW_PLUGIN_ENTRY_SYMBOL))
    return fail(errc::unsupported, "missing entry symbol " FW_PLUGIN_ENTRY_SYMBOL
                                   " (not a flywheel plugin, or not exported: use FW_PLUGIN_EXPORT)");
  const fw_plugin_v1* table = nullptr;
  try {
    auto entry = lib->impl_->lib.get<const fw_plugin_v1*()>(FW_PLUGIN_ENTRY_SYMBOL);
    table = entry();
  } catch (const std::exception& e) {
    return fail(errc::internal, std::string(FW_PLUGIN_ENTRY_SYMBOL "() threw: ") + e.what());
  } catch (...) {
    return fail(errc::internal, FW_PLUGIN_ENTRY_SYMBOL "() threw an exception");
  }
  if (!table) return fail(errc::unsupported, FW_PLUGIN_ENTRY_SYMBOL "() returned NULL");
  if (auto why = plugin_table_problem(*table); !why.empty()) return fail(errc::unsupported, why);

  if (table->probe) {
    char why[512] = {};
    int rc = 0;
    try {
      rc = table->probe(why, sizeof why);
    } catch (...) {
      return fail(errc::internal, "probe() threw an exception");
    }
    why[sizeof why - 1] = '\0';
    if (rc != 0)
      return fail(errc::unsupported,
                  std::string("refused by its probe: ") + (why[0] ? why : "no reason given") +
                      " (code " + std::to_string(rc) + ")");
  }
  lib->table_ = table;
  return lib;
}

std::vector<uint32_t> plugin_library::types() const { return plugin_table_types(*table_); }

expected<void*> plugin_library::create(const std::string& params_json) {
  char err[512] = {};
  void* self = nullptr;
  try {
    self = table_->create(params_json.empty() ? "{}" : params_json.c_str(), err, sizeof err);
  } catch (const std::exception& e) {
    return make_error(errc::worker_failed, describe() + ": create() threw (plugins must not throw): " + e.what());
  } catch (...) {
    return make_error(errc::worker_failed, describe() + ": create() threw an exception (plugins must not throw)");
  }
  err[sizeof err - 1] = '\0';
  if (!self)
    return make_error(errc::worker_failed, describe() + ": create() failed: " + (err[0] ? err : "no reason given"));
  users_.fetch_add(1, std::memory_order_relaxed);
  return self;
}

void plugin_library::destroy(void* self) noexcept {
  try {
    table_->destroy(self);
  } catch (...) {
  }
  users_.fetch_sub(1, std::memory_order_relaxed);
}

std::string plugin_library::describe() const {
  return "plugin '" + name_ + "' " + (table_ ? table_->version : "") + " (" + file_ + ")";
}

error plugin_library::call_error(const char* function, int code) const {
  errc e = errc::internal;
  if (code == FW_PLUGIN_E_INVALID || code == FW_PLUGIN_E_STATE) e = errc::invalid_argument;
  if (code == FW_PLUGIN_E_UNSUPPORTED) e = errc::unsupported;
  if (code == FW_PLUGIN_E_NOMEM) e = errc::out_of_memory;
  return make_error(e, describe() + ": " + function + "() failed: " + plugin_code_name(code) + " (" +
                           std::to_string(code) + ")");
}

}  // namespace fw
