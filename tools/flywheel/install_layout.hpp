// install_layout: where an installed flywheel finds what it ships. `cmake --install build --prefix
// P` puts the binary in P/bin, the plugins in P/lib/flywheel/plugins and the configs in
// P/share/flywheel/conf (their plugin and conf paths rewritten to point there). A binary that runs
// from such a tree (found through /proc/self/exe) uses P/share/flywheel/conf/default.toml when no
// --config is given; one in the build tree keeps the built-in defaults (source-tree paths).
// Thread-safety: pure functions of the file system.
#pragma once

#include <optional>
#include <string>

namespace fw::cli {

/// P when this executable runs from P/bin of an installed tree; nullopt otherwise.
std::optional<std::string> install_prefix();

/// P/share/flywheel/conf/default.toml of an installed tree; nullopt otherwise.
std::optional<std::string> installed_default_config();

}  // namespace fw::cli
