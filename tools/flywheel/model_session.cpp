#include "tools/flywheel/model_session.hpp"

#include "tools/flywheel/install_layout.hpp"


#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "tools/flywheel/commands.hpp"

namespace fw::cli {
namespace {

/// "none|model|...|plugin:NAME", from the config's one list of draft kinds.
std::string draft_choices() {
  std::string out;
  for (const auto& [kind, name] : draft_kind_names)
    out += (out.empty() ? "" : "|") + (kind == draft_kind::plugin ? std::string("plugin:NAME") : std::string(name));
  return out;
}

}  // namespace

void model_session::declare_flags(arg_parser& args) {
  args.option("config", "TOML config file (default: the built-in defaults, see conf/default.toml; an installed "
                        "flywheel: PREFIX/share/flywheel/conf/default.toml)")
      .option("model", std::string("GGUF model file (overrides model.path; built-in: ") + default_model_path + ")")
      .option("threads", "CPU threads, 0 = all cores (overrides compute.threads; built-in: 0)")
      .option("ctx-size", "context window per sequence in tokens, 0 = the model's training context capped at 4096 "
                          "(overrides model.ctx_size; built-in: 4096)")
      .option("draft", "speculative decoding draft: " + draft_choices() + " (overrides speculative.draft)")
      .option("draft-model", "GGUF draft model for --draft model")
      .option("feature-map", "feature map for --draft feature|hybrid (made by `flywheel fit-draft`)")
      .option("draft-k", "draft tokens per step: 1..16 or auto (adaptive)")
      .option("draft-layers", "layer-skip: target layers the draft runs (0 = half)")
      .option("draft-quant", "self-quant: q4_0|q4_1|q8_0");
}

expected<config> model_session::load_config(const arg_parser& args) {
  config cfg;
  // No --config: the built-in defaults, or an installed tree's default.toml (install_layout).
  const std::optional<std::string> path = args.has("config") ? args.str("config") : installed_default_config();
  if (path) {
    auto file = config::from_file(*path);
    if (!file) return file.err();
    cfg = std::move(*file);
  }
  // Flags given explicitly override the file, with the file's checks.
  static const std::pair<const char*, const char*> overrides[] = {
      {"model", "model.path"}, {"threads", "compute.threads"}, {"ctx-size", "model.ctx_size"},
      {"draft", "speculative.draft"}, {"draft-model", "speculative.draft_model"}, {"feature-map", "speculative.feature_map"}, {"draft-k", "speculative.k"},
      {"draft-layers", "speculative.draft_layers"}, {"draft-quant", "speculative.draft_quant"}};
  for (const auto& [flag, key] : overrides) {
    if (!args.has(flag)) continue;
    if (auto ok = cfg.set(key, args.str(flag)); !ok)
      return make_error(ok.err().code, std::string("--") + flag + ": " + ok.err().message);
  }
  return cfg;
}

expected<runtime_parts> model_session::open(const arg_parser& args, bool verbose, const build_options& options) {
  auto cfg = load_config(args);
  if (!cfg) return cfg.err();
  auto s = build_runtime(std::move(*cfg), options);
  if (!s) return s.err();
  if (verbose) {
    if (s->draft) std::fprintf(stderr, "speculative decoding: draft %s, k %s\n", s->draft->name().c_str(),
                               s->cfg.speculative.k ? std::to_string(*s->cfg.speculative.k).c_str() : "auto");
    for (const auto& k : s->device()->kernel_paths()) {
      std::fprintf(stderr, "kernel: %-5s -> %s%s%s\n", k.weight_type.c_str(), k.path.c_str(),
                   k.fallback ? "  WARNING: " : "", k.fallback ? k.note.c_str() : "");
    }
  }
  return s;
}

}  // namespace fw::cli
