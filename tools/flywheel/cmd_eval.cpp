// flywheel eval: the quality report of a model against a reference (runtime/quant/quality_eval).
#include <cstdio>
#include <fstream>

#include "tools/flywheel/cancel_flag.hpp"
#include "tools/flywheel/commands.hpp"
#include "tools/flywheel/model_session.hpp"
#include "tools/flywheel/quality_runner.hpp"

namespace fw::cli {

int cmd_eval(int argc, char** argv) {
  arg_parser args("eval");
  model_session::declare_flags(args);
  args.option("ref", "the reference GGUF (e.g. the f16 export of the same model)")
      .option("text", "held-out text ('#' lines skipped; not the calibration file)", "conf/eval/heldout.txt")
      .option("ctx", "tokens per perplexity chunk", "512")
      .option("chunks", "chunks at most (0: the whole text)", "0")
      .option("queries", "queries for greedy agreement (one per line); none when not given")
      .option("max-queries", "queries of --queries used (the longest)", "16")
      .option("gen", "greedy tokens per query", "32")
      .option("json", "also write the report as JSON to this file");
  if (auto done = args.parse_or_exit_code(argc, argv)) return *done;
  auto fail = [](const std::string& msg, int code) {
    std::fprintf(stderr, "eval: %s\n", msg.c_str());
    return code;
  };
  if (!args.has("ref")) return fail("--ref FILE is required (the model to compare against)", 2);
  auto ctx = args.integer("ctx", 16);
  auto chunks = args.integer("chunks", 0);
  auto maxq = args.integer("max-queries", 1);
  auto gen = args.integer("gen", 1);
  for (const auto* v : {&ctx, &chunks, &maxq, &gen})
    if (!*v) return fail(v->err().message, 2);
  auto cfg = model_session::load_config(args);
  if (!cfg) return fail(cfg.err().what(), 2);
  quality_run run;
  run.model_path = cfg->model.path;
  run.ref_path = args.str("ref");
  run.text_path = args.str("text");
  if (args.has("queries")) run.queries_path = args.str("queries");
  run.max_queries = static_cast<uint32_t>(*maxq);
  run.options.ctx = static_cast<uint32_t>(*ctx);
  run.options.max_chunks = static_cast<uint32_t>(*chunks);
  run.options.gen_tokens = static_cast<uint32_t>(*gen);
  run.options.cancel = &install_cancel_on_sigint();
  auto rep = run_quality(*cfg, run);
  if (!rep) return fail(rep.err().what(), rep.err().code == errc::cancelled ? 130 : 1);
  print_quality(*rep, run);
  if (args.has("json")) {
    std::ofstream f(args.str("json"));
    f << quality_json(*rep, run).dump(2) << "\n";
    if (!f) return fail("cannot write " + args.str("json"), 1);
  }
  return 0;
}

}  // namespace fw::cli
