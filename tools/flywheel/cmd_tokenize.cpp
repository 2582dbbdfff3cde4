#include <cstdio>
#include <string>

#include "runtime/model/model.hpp"
#include "tools/flywheel/arg_parser.hpp"
#include "tools/flywheel/commands.hpp"
#include "tools/flywheel/model_session.hpp"

namespace fw::cli {

int cmd_tokenize(int argc, char** argv) {
  arg_parser args("tokenize");
  model_session::declare_flags(args);
  args.option("text", "text to tokenize")
      .flag("no-special", "treat special-token text (<|im_start|>) as plain text")
      .flag("add-bos", "prepend BOS when the model asks for it");
  if (auto done = args.parse_or_exit_code(argc, argv)) return *done;
  if (!args.has("text")) {
    std::fprintf(stderr, "tokenize: --text is required\n");
    return 2;
  }
  auto cfg = model_session::load_config(args);  // --config and --model, like every subcommand
  if (!cfg) {
    std::fprintf(stderr, "tokenize: %s\n", cfg.err().message.c_str());
    return 2;
  }
  auto m = model::load(cfg->model.path);
  if (!m) {
    std::fprintf(stderr, "tokenize: %s\n", m.err().what().c_str());
    return 1;
  }
  const auto ids = (*m)->vocab().encode(args.str("text"), args.on("add-bos"), !args.on("no-special"));
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  out += "]\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace fw::cli
