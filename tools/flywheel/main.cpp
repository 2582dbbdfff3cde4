// flywheel: one executable, vLLM-style subcommands.
#include <cstdio>
#include <cstring>
#include <string>

#include "tools/flywheel/commands.hpp"

namespace {

#ifndef FW_WITH_BENCH
// A build configured with -DFW_BENCH=OFF (scripts/sanitize.sh's instrumented one) has no
// benchmark commands.
int no_bench(int, char**) {
  std::fprintf(stderr, "flywheel: the benchmark commands are not in this build (configured with -DFW_BENCH=OFF); "
                       "scripts/setup.sh's build has them\n");
  return 2;
}
#endif

struct command {
  const char* name;
  int (*run)(int, char**);
  const char* help;
};

constexpr command commands[] = {
    {"console", fw::cli::cmd_console, "interactive chat and runtime console (:help inside for commands)"},
    {"serve", fw::cli::cmd_serve, "OpenAI-compatible HTTP server: /v1/completions, /v1/chat/completions, /metrics"},
    {"generate", fw::cli::cmd_generate, "generate text from a prompt (or a chat turn with --chat)"},
    {"tokenize", fw::cli::cmd_tokenize, "print the token ids of a text as a JSON array"},
#ifdef FW_WITH_BENCH
    {"bench", fw::cli::cmd_bench, "measure prefill and decode tokens/s like llama-bench (and the decode bound)"},
    {"bench-spec", fw::cli::cmd_bench_spec, "speculative decoding vs plain decoding: acceptance and speedup per draft and k"},
#else
    {"bench", no_bench, "(not in this build: -DFW_BENCH=OFF)"},
    {"bench-spec", no_bench, "(not in this build: -DFW_BENCH=OFF)"},
#endif
    {"fit-draft", fw::cli::cmd_fit_draft, "fit the feature draft (--draft feature) on prompts: greedy answers, one linear solve"},
    {"quantize", fw::cli::cmd_quantize, "write a model in another scheme: f16/q4_0/..., or W8A8/W4A16/mixed calibrated on your queries"},
    {"eval", fw::cli::cmd_eval, "quality of a model against a reference: perplexity, KL, top-1, per-layer error"},
    {"info", fw::cli::cmd_info, "show a model's metadata and the kernel path of each weight type"},
    {"config-reference", fw::cli::cmd_config_reference, "print every config key (type, default, range, meaning) as Markdown"},
    {"plugins", fw::cli::cmd_plugins, "list the config's plugins (name kind version file state users) or --check a file"},
};

void print_usage() {
  std::fprintf(stderr, "usage: flywheel COMMAND [flags]   (flywheel COMMAND --help for flags)\n\ncommands:\n");
  for (const auto& c : commands) std::fprintf(stderr, "  %-10s %s\n", c.name, c.help);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : commands)
    if (std::strcmp(argv[1], c.name) == 0) return c.run(argc - 2, argv + 2);
  std::fprintf(stderr, "flywheel: unknown command '%s'\n", argv[1]);
  print_usage();
  return 2;
}
