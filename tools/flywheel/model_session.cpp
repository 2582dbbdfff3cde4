#include "tools/flywheel/model_session.hpp"


#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "runtime/drafter_factory.hpp"
#include "tools/flywheel/commands.hpp"

namespace fw::cli {

void model_session::declare_flags(arg_parser& args) {
  args.option("config", "TOML config file (default: none, built-in defaults; see conf/default.toml)")
      .option("model", std::string("GGUF model file (overrides model.path; built-in: ") + default_model_path + ")")
      .option("threads", "CPU threads, 0 = all cores (overrides compute.threads; built-in: 0)")
      .option("ctx-size", "context window per sequence in tokens, 0 = the model's training context capped at 4096 "
                          "(overrides model.ctx_size; built-in: 4096)")
      .option("draft", "speculative decoding draft: none|ngram|feature|hybrid|layer-skip|self-quant|model (overrides speculative.draft)")
      .option("draft-model", "GGUF draft model for --draft model")
      .option("feature-map", "feature map for --draft feature|hybrid (made by `flywheel fit-draft`)")
      .option("draft-k", "draft tokens per step: 1..16 or auto (adaptive)")
      .option("draft-layers", "layer-skip: target layers the draft runs (0 = half)")
      .option("draft-quant", "self-quant: q4_0|q4_1|q8_0");
}

expected<config> model_session::load_config(const arg_parser& args) {
  config cfg;
  if (args.has("config")) {
    auto file = config::from_file(args.str("config"));
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

expected<model_session> model_session::open(const arg_parser& args, bool verbose) {
  auto cfg = load_config(args);
  if (!cfg) return cfg.err();
  auto m = model::load(cfg->model.path);
  if (!m) return m.err();
  model_session s;
  s.cfg = std::move(*cfg);
  s.m = *m;
  const uint32_t train = s.m->config().n_ctx_train;
  const uint32_t ctx = s.cfg.model.ctx_size;
  s.n_ctx = ctx > 0 ? ctx : std::min<uint32_t>(train, 4096);
  if (s.n_ctx > train && verbose)
    std::fprintf(stderr, "warning: context size %u exceeds the model's training context %u\n", s.n_ctx, train);
  s.plugins = std::make_unique<plugin_host>();
  for (const auto& err : s.plugins->load_all(s.cfg.plugins))
    std::fprintf(stderr, "warning: plugin not loaded: %s\n", err.message.c_str());
  auto kernels = make_kernel_plugins(s.cfg, *s.plugins);
  if (!kernels) return kernels.err();
  cpu_backend_options o;
  o.kernel_plugins = std::move(*kernels);
  o.threads = s.cfg.compute.threads;
  o.kv_tokens = s.n_ctx;  // one sequence at a time here; [kv_cache] pool sizes serve the runtime
  o.kv_block_tokens = s.cfg.kv_cache.block_tokens;
  o.kv_type = s.cfg.kv_cache.dtype();
  s.backend = std::make_unique<cpu_backend>(s.m->config(), s.m->weights(), o);
  if (auto ok = s.rebuild_draft(); !ok) return ok.err();
  if (verbose) {
    if (s.draft) std::fprintf(stderr, "speculative decoding: draft %s, k %s\n", s.draft->name().c_str(), s.cfg.speculative.k.c_str());
    for (const auto& k : s.backend->kernel_paths()) {
      std::fprintf(stderr, "kernel: %-5s -> %s%s%s\n", k.weight_type.c_str(), k.path.c_str(),
                   k.fallback ? "  WARNING: " : "", k.fallback ? k.note.c_str() : "");
    }
  }
  return s;
}

expected<std::vector<std::shared_ptr<quant_kernel_plugin>>> make_kernel_plugins(const config& cfg, plugin_host& host) {
  std::vector<std::shared_ptr<quant_kernel_plugin>> out;
  for (const auto& name : cfg.compute.kernel_plugins) {
    auto k = host.create_quant_kernel(name);
    if (!k) return make_error(k.err().code, "compute.kernel_plugins: " + k.err().message);
    out.push_back(std::move(*k));
  }
  return out;
}

expected<void> model_session::rebuild_draft() {
  draft.reset();
  auto d = make_drafter(cfg.speculative, m, *backend, n_ctx, plugins.get());
  if (!d) return d.err();
  draft = std::move(*d);
  policy = make_k_policy(cfg, draft != nullptr, *backend);
  return {};
}

}  // namespace fw::cli
