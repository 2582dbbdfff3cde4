#include "tools/flywheel/install_layout.hpp"

#include <filesystem>
#include <system_error>

namespace fw::cli {

std::optional<std::string> install_prefix() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || exe.parent_path().filename() != "bin") return std::nullopt;
  const fs::path prefix = exe.parent_path().parent_path();
  if (!fs::exists(prefix / "share" / "flywheel" / "conf" / "default.toml", ec)) return std::nullopt;
  return prefix.string();
}

std::optional<std::string> installed_default_config() {
  auto prefix = install_prefix();
  if (!prefix) return std::nullopt;
  return *prefix + "/share/flywheel/conf/default.toml";
}

}  // namespace fw::cli
