#include "tools/flywheel/model_session.hpp"

#include <cstdio>

#include "tools/flywheel/commands.hpp"

namespace fw::cli {

void model_session::declare_flags(arg_parser& args) {
  args.option("model", "GGUF model file", default_model_path)
      .option("threads", "CPU threads (0 = all cores)", "0")
      .option("ctx-size", "context window per sequence in tokens (0 = the model's training context, capped at 4096)", "0");
}

expected<model_session> model_session::open(const arg_parser& args, bool verbose) {
  auto threads = args.integer("threads");
  if (!threads) return threads.err();
  auto ctx = args.integer("ctx-size");
  if (!ctx) return ctx.err();
  if (*threads < 0 || *threads > 1024) return make_error(errc::invalid_argument, "--threads must be in [0, 1024]");
  if (*ctx < 0 || *ctx > (1 << 20)) return make_error(errc::invalid_argument, "--ctx-size must be in [0, 1048576]");
  auto m = model::load(args.str("model"));
  if (!m) return m.err();
  model_session s;
  s.m = *m;
  const uint32_t train = s.m->config().n_ctx_train;
  s.n_ctx = *ctx > 0 ? static_cast<uint32_t>(*ctx) : std::min<uint32_t>(train, 4096);
  if (s.n_ctx > train && verbose)
    std::fprintf(stderr, "warning: --ctx-size %u exceeds the model's training context %u\n", s.n_ctx, train);
  cpu_backend_options o;
  o.threads = static_cast<int>(*threads);
  o.kv_tokens = s.n_ctx;
  s.backend = std::make_unique<cpu_backend>(s.m->config(), s.m->weights(), o);
  if (verbose) {
    for (const auto& k : s.backend->kernel_paths()) {
      std::fprintf(stderr, "kernel: %-5s -> %s%s%s\n", k.weight_type.c_str(), k.path.c_str(),
                   k.fallback ? "  WARNING: " : "", k.fallback ? k.note.c_str() : "");
    }
  }
  return s;
}

}  // namespace fw::cli
