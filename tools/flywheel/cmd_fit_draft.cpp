// flywheel fit-draft: fits the feature draft (--draft feature) on a prompt file: the target answers
// each prompt greedily, its hidden states train a linear next-state map (runtime/feature_drafter),
// and the map plus the answers' most frequent tokens are saved as a small GGUF.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/model/user_prompt.hpp"
#include "runtime/spec/drafts/feature_drafter.hpp"
#include "runtime/spec/drafts/feature_fit.hpp"
#include "tools/flywheel/arg_parser.hpp"
#include "runtime/setup/feature_map_fit.hpp"
#include "tools/flywheel/commands.hpp"
#include "tools/flywheel/model_session.hpp"

namespace fw::cli {
namespace {


}  // namespace

int cmd_fit_draft(int argc, char** argv) {
  arg_parser args("fit-draft");
  model_session::declare_flags(args);
  args.option("prompts", "prompt file: one user message per line", "conf/calibration/prompts.txt")
      .option("out", "feature map to write", "models/feature_draft.gguf")
      .option("max-tokens", "greedy answer tokens per prompt at most", "96")
      .option("vocab", "candidate tokens the draft may propose (most frequent in the answers)", "2048")
      .option("ridge", "regularization per 10,000 training pairs", "1.0")
      .option("epochs", "cross-entropy refinement passes after the ridge solution (0: none)", "8")
      .option("batch", "prompts answered together", "16")
      .flag("if-missing", "do nothing when --out already holds a feature map this build reads (setup uses it)");
  if (auto done = args.parse_or_exit_code(argc, argv)) return *done;
  auto max_tokens = args.integer("max-tokens", 2);
  auto vocab = args.integer("vocab", 1);
  auto epochs = args.integer("epochs", 0);
  auto batch = args.integer("batch", 1);
  for (const auto* v : {&max_tokens, &vocab, &epochs, &batch}) {
    if (!*v) {
      std::fprintf(stderr, "fit-draft: %s\n", v->err().message.c_str());
      return 2;
    }
  }
  auto ridge = args.number("ridge");
  if (!ridge || !(*ridge >= 0)) {
    std::fprintf(stderr, "%s\n", ridge ? "fit-draft: --ridge must be at least 0" : ridge.err().message.c_str());
    return 2;
  }
  if (args.on("if-missing")) {
    if (auto existing = load_feature_map(args.str("out"))) {
      std::printf("fit-draft: %s is there (%u training pairs); not refitting\n", args.str("out").c_str(), existing->samples);
      return 0;
    }
  }
  auto texts = read_prompt_file(args.str("prompts"));
  if (!texts) {
    std::fprintf(stderr, "fit-draft: %s\n", texts.err().what().c_str());
    return 2;
  }
  auto session = model_session::open(args, false);
  if (!session) {
    std::fprintf(stderr, "fit-draft: %s\n", session.err().what().c_str());
    return 1;
  }
  const model& m = *session->m;
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& t : *texts)
    prompts.push_back(user_prompt(m, t));
  feature_fit_options o;
  o.max_tokens = static_cast<int>(*max_tokens);
  o.vocab_size = static_cast<uint32_t>(*vocab);
  o.ridge = *ridge;
  o.epochs = static_cast<int>(*epochs);
  o.batch = static_cast<uint32_t>(*batch);
  const bool tty = ::isatty(2) != 0;
  o.progress = [tty](size_t done, size_t total) {
    if (tty) {
      std::fprintf(stderr, "\rfit-draft: answered %zu/%zu prompts", done, total);
      if (done == total) std::fprintf(stderr, "\n");
    } else if (done % 50 == 0 || done == total) {
      std::fprintf(stderr, "fit-draft: answered %zu/%zu prompts\n", done, total);
    }
  };
  feature_fit_report report;
  auto map = fit_feature_map(m, *session->device(), *session->threads(), prompts, o, &report);
  if (!map) {
    std::fprintf(stderr, "fit-draft: %s\n", map.err().what().c_str());
    return 1;
  }
  if (auto ok = save_feature_map(*map, args.str("out")); !ok) {
    std::fprintf(stderr, "fit-draft: %s\n", ok.err().what().c_str());
    return 1;
  }
  std::printf("fit-draft: %u training pairs, %zu candidate tokens -> %s\n", map->samples, map->vocab.size(),
              args.str("out").c_str());
  if (report.held_out > 0)
    std::printf("fit-draft: next-token accuracy on %u held-out pairs: %.1f%% (ridge), %.1f%% after %d refinement epoch%s\n",
                report.held_out, 100 * report.ridge_accuracy, 100 * report.accuracy, report.epochs_kept,
                report.epochs_kept == 1 ? "" : "s");
  return 0;
}

}  // namespace fw::cli
