// flywheel bench soak: the chaos soak (tools/bench/bench_soak): the workload through the real
// server while faults of every kind are injected at random; prints the table and the verdict,
// writes the JSON, and exits 1 when the verdict is "fail".
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "runtime/base/free_memory.hpp"
#include "tools/bench/bench_soak.hpp"
#include "tools/bench/server_process.hpp"
#include "tools/flywheel/arg_parser.hpp"
#include "tools/flywheel/commands.hpp"
#include "tools/flywheel/install_layout.hpp"

namespace fw::cli {

int cmd_bench_soak(int argc, char** argv) {
  limit_allocator_arenas();  // as `flywheel serve` does: the soak measures what a server does
  arg_parser args("bench soak");
  const std::string default_config = installed_default_config().value_or("conf/default.toml");
  const auto prefix = install_prefix();
  const std::string default_workload =
      (prefix ? *prefix + "/share/flywheel/" : std::string()) + "conf/workloads/customer_service.jsonl";
  args.option("config", "the configuration to soak (it serves as a decode node of a prefill node in a child process)",
              default_config)
      .option("workload", "JSONL workload (one request per line: class, messages, max_tokens)", default_workload)
      .option("duration", "seconds of requests and faults", "600")
      .option("rate", "mean arrivals per second (Poisson)", "2")
      .option("fault-every", "mean seconds between faults", "0.8")
      .option("max-tokens", "each request's max_tokens, at most this", "32")
      .option("prompts", "distinct workload lines (each run once, undisturbed, for the reference tokens)", "40")
      .option("seed", "seed of the arrivals and the faults", "1")
      .option("rss-bound", "allowed growth of resident memory after warm-up, as a share", "0.10")
      .option("hang-s", "a request without its end after this many seconds is hung (lost)", "120")
      .flag("one-process", "no prefill node process (no KV stream or prefill node faults)")
      .option("faults", "the fault kinds to inject (comma list of decode_worker, prefill_worker, draft_actor, kv_reserve, "
                        "kv_stream, prefill_node_kill, client_disconnect, plugin_reload, drill; \"none\": no faults); "
                        "default: every kind the run can inject")
      .option("work-dir", "folder for the prefill node's config and log", "soak")
      .option("out", "write the JSON report here");
  if (auto done = args.parse_or_exit_code(argc, argv)) return *done;
  soak_options o;
  o.exe = self_executable();
  o.config_path = args.str("config");
  o.workload_path = args.str("workload");
  auto duration = args.number("duration");
  auto rate = args.number("rate");
  auto gap = args.number("fault-every");
  auto max_tokens = args.integer("max-tokens", 1);
  auto prompts = args.integer("prompts", 1);
  auto seed = args.integer("seed", 0);
  auto bound = args.number("rss-bound");
  auto hang = args.number("hang-s");
  if (!duration || !(*duration > 0) || !rate || !(*rate > 0) || *rate > 100 || !gap || !(*gap > 0) || !max_tokens ||
      !prompts || !seed || !bound || !(*bound > 0) || !hang || !(*hang > 0)) {
    std::fprintf(stderr, "bench soak: --duration, --rate (up to 100), --fault-every and --rss-bound must be numbers above 0, "
                         "--max-tokens and --prompts integers of at least 1\n");
    return 2;
  }
  o.duration_s = *duration;
  o.rate = *rate;
  o.fault_gap_s = *gap;
  o.max_tokens = static_cast<int>(*max_tokens);
  o.prompts = static_cast<size_t>(*prompts);
  o.seed = static_cast<uint64_t>(*seed);
  o.rss_bound = *bound;
  o.hang_s = *hang;
  o.prefill_node = !args.has("one-process");
  o.work_dir = args.str("work-dir");
  if (args.has("faults") && args.str("faults") != "none") o.faults = args.list("faults");
  if (args.has("faults") && args.str("faults") == "none") o.faults = {"none"};
  server_process::kill_children_on_signals();  // a soak stopped with `kill` takes its prefill node along
  auto r = run_soak(o, [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  });
  if (!r) {
    std::fprintf(stderr, "bench soak: %s\n", r.err().what().c_str());
    return 1;
  }
  print_soak(*r);
  if (args.has("out")) {
    std::ofstream(args.str("out")) << r->dump(2) << "\n";
    std::printf("wrote %s\n", args.str("out").c_str());
  }
  return (*r)["verdict"] == "pass" ? 0 : 1;
}

}  // namespace fw::cli
