// flywheel plugins: the plugin registry as the runtime would build it from a config, or a check
// of one plugin file.
//   flywheel plugins --config FILE [--json]   load [[plugins.load]] and list one plugin per line:
//                                              name kind version file state users
//                                              (a refused plugin's row ends with "  (why)";
//                                              exit 1 when any plugin was refused)
//   flywheel plugins --check PATH [--json]    validate one file: exit 0 and its row, or exit 1 and
//                                              why the host would refuse it
#include <cstdio>
#include <nlohmann/json.hpp>

#include <optional>

#include "runtime/config/config.hpp"
#include "tools/flywheel/install_layout.hpp"
#include "runtime/plugin/plugin_host.hpp"
#include "tools/flywheel/arg_parser.hpp"
#include "tools/flywheel/commands.hpp"

namespace fw::cli {

int cmd_plugins(int argc, char** argv) {
  arg_parser args("plugins");
  args.option("config", "TOML config file whose [plugins] to load (default: built-in defaults, no plugins)")
      .option("check", "validate one plugin file and print why it would be refused")
      .flag("json", "print JSON (a list of objects with name, kind, version, file, state, users)");
  if (auto done = args.parse_or_exit_code(argc, argv)) return *done;
  const bool json = args.on("json");

  if (args.has("check")) {
    auto row = plugin_host::check(args.str("check"));
    if (json) {
      nlohmann::json j = row ? nlohmann::json::parse(row->to_json()) : nlohmann::json::object();
      j["ok"] = static_cast<bool>(row);
      if (!row) {
        j["file"] = args.str("check");
        j["error"] = row.err().message;
      }
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else if (row) {
      std::printf("ok: %s\n", row->to_line().c_str());
    }
    if (!row && !json) std::printf("refused: %s\n", row.err().message.c_str());
    return row ? 0 : 1;
  }

  config cfg;
  const std::optional<std::string> path = args.has("config") ? args.str("config") : installed_default_config();
  if (path) {
    auto file = config::from_file(*path);
    if (!file) {
      std::fprintf(stderr, "plugins: %s\n", file.err().what().c_str());
      return 2;
    }
    cfg = std::move(*file);
  }
  plugin_host host;
  const auto errors = host.load_all(cfg.plugins);
  const auto rows = host.list();
  if (json) {
    std::printf("%s\n", to_json(rows).c_str());
  } else {
    if (rows.empty()) std::printf("no plugins configured ([[plugins.load]] in the config)\n");
    for (const auto& r : rows) std::printf("%s\n", r.to_line().c_str());
  }
  return errors.empty() ? 0 : 1;
}

}  // namespace fw::cli
