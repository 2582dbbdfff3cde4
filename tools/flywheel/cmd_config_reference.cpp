// flywheel config-reference: prints every configuration key as Markdown (docs/config-reference.md),
// generated from the config schema, with the descriptions of conf/default.toml.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "runtime/config/config_reference.hpp"
#include "tools/flywheel/arg_parser.hpp"
#include "tools/flywheel/commands.hpp"

namespace fw::cli {

int cmd_config_reference(int argc, char** argv) {
  arg_parser args("config-reference");
  args.option("defaults", "the commented default config whose comments describe the keys", "conf/default.toml");
  if (auto done = args.parse_or_exit_code(argc, argv)) return *done;
  std::ifstream f(args.str("defaults"));
  if (!f) {
    std::fprintf(stderr, "config-reference: cannot read %s\n", args.str("defaults").c_str());
    return 1;
  }
  std::stringstream text;
  text << f.rdbuf();
  const std::string md = config_reference_markdown(text.str());
  std::fwrite(md.data(), 1, md.size(), stdout);
  return 0;
}

}  // namespace fw::cli
