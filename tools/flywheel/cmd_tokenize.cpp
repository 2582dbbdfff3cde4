// `flywheel tokenize`: the token ids of a text as a JSON array, from the model file's vocabulary
// alone (no weights are read, so a vocab-only GGUF works, as llama.cpp's vocab_only load does).
#include <cstdio>
#include <string>

#include "runtime/gguf/gguf_file.hpp"
#include "runtime/text/tokenizer.hpp"
#include "tools/flywheel/arg_parser.hpp"
#include "tools/flywheel/commands.hpp"
#include "tools/flywheel/model_session.hpp"

namespace fw::cli {

int cmd_tokenize(int argc, char** argv) {
  arg_parser args("tokenize");
  model_session::declare_flags(args);
  args.option("text", "text to tokenize")
      .flag("no-bos", "add no BOS/EOS even where the vocabulary asks for them")
      .flag("no-parse-special", "tokenize special-token text (<|im_start|>, <s>) as plain text");
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
  auto file = gguf_file::open(cfg->model.path);
  if (!file) {
    std::fprintf(stderr, "tokenize: %s\n", file.err().what().c_str());
    return 1;
  }
  auto tok = tokenizer::from_gguf(**file);
  if (!tok) {
    std::fprintf(stderr, "tokenize: %s: %s\n", cfg->model.path.c_str(), tok.err().what().c_str());
    return 1;
  }
  const auto ids = tok->encode(args.str("text"), !args.on("no-bos"), !args.on("no-parse-special"));
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  out += "]\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace fw::cli
