// flywheel bench ablation: the seed's ablation through the server (tools/bench/bench_ablation):
// each lever alone and all three, on a workload replayed through `flywheel serve` children
// started from the user's config, with other OpenAI-compatible servers (--peer) in the same
// table. Prints the table and writes OUT/ablation.json and OUT/ablation.svg.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tools/bench/ablation_report.hpp"
#include "tools/bench/bench_ablation.hpp"
#include "tools/bench/server_process.hpp"
#include "tools/flywheel/arg_parser.hpp"
#include "tools/flywheel/commands.hpp"
#include "tools/flywheel/install_layout.hpp"

namespace fw::cli {

namespace {

expected<std::vector<double>> rate_list(const arg_parser& args, const std::string& flag) {
  std::vector<double> out;
  for (const auto& item : args.list(flag)) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (end == item.c_str() || *end != '\0' || !(v > 0) || v > 1000)
      return make_error(errc::invalid_argument, "--" + flag + ": '" + item + "' is not a rate in (0, 1000] requests/s");
    out.push_back(v);
  }
  if (out.empty()) return make_error(errc::invalid_argument, "--" + flag + ": no rate given");
  return out;
}

}  // namespace

int cmd_bench_ablation(int argc, char** argv) {
  arg_parser args("bench ablation");
  const std::string default_config = installed_default_config().value_or("conf/default.toml");
  const auto prefix = install_prefix();
  const std::string default_workload =
      (prefix ? *prefix + "/share/flywheel/" : std::string()) + "conf/workloads/customer_service.jsonl";
  args.option("config", "the configuration the variants are derived from", default_config)
      .option("workload", "JSONL workload (one request per line: class, messages, max_tokens[, at_s])",
              default_workload)
      .option("rate", "mean arrivals per second (Poisson)", "1")
      .option("sweep", "several rates (comma list): each configuration's highest rate within the SLO")
      .option("duration", "seconds of arrivals per rate", "60")
      .option("drain", "seconds the open requests get after the last arrival (then they count as unfinished)", "60")
      .option("slo-ttft-ms", "SLO: time to first token", "1000")
      .option("slo-tpot-ms", "SLO: time per output token", "50")
      .option("slo-share", "--sweep: a rate is met when this share of the requests is within the SLO (the shipped workload's 10% long tickets rarely meet a 1 s TTFT on CPUs)", "0.8")
      .option("quant", "the quantization lever: w8a8 or w4a16 (made by flywheel quantize, calibrated on the "
                       "workload's queries, cached), or a GGUF file", "w8a8")
      .option("draft", "the speculation lever's draft (default: the config's, ngram when it has none)")
      .option("only", "configurations to run (comma list of baseline, quant, spec, pd, quant+spec, quant+pd, all)")
      .option("peer", "other OpenAI-compatible servers in the same table (comma list of http://HOST:PORT)")
      .option("temperature", "sampling temperature of every request", "0")
      .option("seed", "seed of the arrival times and the workload line the run starts at (0: a new one each run, "
                      "printed in the JSON; a running peer then sees prompts it has not cached)", "0")
      .option("quality-chunks", "512-token chunks of the workload's texts for the perplexity check (0: skip)", "4")
      .option("cache-dir", "where the 16-bit and quantized files are kept between runs", "models/ablation")
      .option("out", "folder for ablation.json, ablation.svg, the configs and the server logs", "ablation");
  if (auto done = args.parse_or_exit_code(argc, argv)) return *done;
  ablation_options o;
  o.exe = self_executable();
  o.config_path = args.str("config");
  o.workload_path = args.str("workload");
  auto rates = rate_list(args, args.has("sweep") ? "sweep" : "rate");
  auto duration = args.number("duration");
  auto drain = args.number("drain");
  auto ttft = args.number("slo-ttft-ms");
  auto tpot = args.number("slo-tpot-ms");
  auto share = args.number("slo-share");
  auto temperature = args.number("temperature");
  auto seed = args.integer("seed", 0);
  auto chunks = args.integer("quality-chunks", 0);
  if (!rates) {
    std::fprintf(stderr, "bench ablation: %s\n", rates.err().message.c_str());
    return 2;
  }
  if (!duration || !(*duration > 0) || !drain || *drain < 0 || !ttft || !(*ttft > 0) || !tpot || !(*tpot > 0) || !share ||
      !(*share > 0 && *share <= 1) || !temperature || *temperature < 0 || !seed || !chunks) {
    std::fprintf(stderr, "bench ablation: --duration, --slo-ttft-ms and --slo-tpot-ms above 0, --drain and --temperature "
                         "at least 0, --slo-share in (0, 1], --seed and --quality-chunks integers >= 0\n");
    return 2;
  }
  o.rates = *rates;
  o.duration_s = *duration;
  o.drain_s = *drain;
  o.target = {*ttft, *tpot};
  o.slo_share = *share;
  o.temperature = *temperature;
  o.seed = static_cast<uint64_t>(*seed);
  o.quality_chunks = static_cast<int>(*chunks);
  o.quant = args.str("quant");
  o.draft = args.str("draft");
  o.only = args.list("only");
  o.peers = args.list("peer");
  o.cache_dir = args.str("cache-dir");
  o.out_dir = args.str("out");
  server_process::kill_children_on_signals();  // stopped with `kill`: its servers go too
  auto r = run_ablation(o);
  if (!r) {
    std::fprintf(stderr, "bench ablation: %s\n", r.err().what().c_str());
    return r.err().code == errc::invalid_argument ? 2 : 1;
  }
  print_ablation(*r);
  const auto dir = std::filesystem::path(o.out_dir);
  std::ofstream(dir / "ablation.json") << r->dump(2) << "\n";
  std::ofstream(dir / "ablation.svg") << ablation_svg(*r);
  std::printf("\nwrote %s and %s\n", (dir / "ablation.json").string().c_str(), (dir / "ablation.svg").string().c_str());
  return 0;
}

}  // namespace fw::cli
