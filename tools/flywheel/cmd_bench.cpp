// flywheel bench: throughput of the CPU backend measured like llama-bench, so the two can be put
// side by side (tools/bench/compare_llama_cpp.sh).
//   ppN        one forward of N prompt rows of one sequence (after `depth` context tokens): N / t
//   tgN        N single-row decode steps after `depth` context tokens: N / t
//   tgNxB      N steps of one forward over B sequences (one row each, every sequence at `depth`):
//              B * N / t, plus the cost of a B-row step relative to a 1-row step
// Token ids are random but valid; every test runs once untimed, then --reps timed runs (mean and
// standard deviation of the per-run tokens/s, as llama-bench reports). The decode bound is the
// bytes of weights one decode step reads divided by the measured read bandwidth.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/bench/bench_concurrency.hpp"
#include "tools/bench/bench_gpu.hpp"
#include "tools/bench/bench_mixed.hpp"
#include "tools/bench/bench_nodes.hpp"
#include "tools/bench/bench_server.hpp"

#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/stream_bench.hpp"
#include "runtime/device/backend.hpp"
#include "runtime/device/forward_batch.hpp"
#include "tools/flywheel/arg_parser.hpp"
#include "tools/flywheel/commands.hpp"
#include "tools/flywheel/model_session.hpp"

namespace fw::cli {
namespace {

using clock_type = std::chrono::steady_clock;

struct bench_spec {
  std::vector<int> prompt;
  std::vector<int> depth;
  int gen = 0;
  int batch_rows = 0;
  int reps = 0;
};

struct bench_result {
  std::string test;  ///< "pp512", "tg128", "tg128x16"
  int depth = 0;
  int rows = 1;                ///< sequences per step (tgNxB)
  std::vector<double> tok_s;   ///< one per timed run
  double step_cost_vs_1row = 0;  ///< tgNxB only

  double mean() const {
    double s = 0;
    for (double v : tok_s) s += v;
    return tok_s.empty() ? 0 : s / static_cast<double>(tok_s.size());
  }
  double stddev() const {
    if (tok_s.size() < 2) return 0;
    const double m = mean();
    double s = 0;
    for (double v : tok_s) s += (v - m) * (v - m);
    return std::sqrt(s / static_cast<double>(tok_s.size() - 1));
  }
};

bench_result make_result(std::string test, int depth, int rows) {
  bench_result r;
  r.test = std::move(test);
  r.depth = depth;
  r.rows = rows;
  return r;
}

expected<std::vector<int>> int_list(const std::string& text, const std::string& flag, int lo) {
  std::vector<int> out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t j = std::min(text.find(',', i), text.size());
    const std::string item = text.substr(i, j - i);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < lo || v > (1 << 20))
      return make_error(errc::invalid_argument, "--" + flag + ": '" + item + "' is not an integer >= " + std::to_string(lo));
    out.push_back(static_cast<int>(v));
    i = j + 1;
  }
  return out;
}

/// Runs the tests on one backend. Context is built once per depth (untimed) and each timed run
/// is rolled back to it with kv_block_pool::truncate, so runs do not grow the context.
class bench_runner {
 public:
  bench_runner(backend& be, const model_config& cfg) : be_(be), cfg_(cfg), rng_(1234) {}

  ~bench_runner() {
    for (auto& h : ctx_) ignore_error("bench KV", be_.kv_pool().release(h));
  }

  /// Makes `n` sequences of `depth` random tokens (the first prefilled, the others copies).
  expected<void> make_context(int depth, int n) {
    for (auto& h : ctx_) ignore_error("bench KV", be_.kv_pool().release(h));
    ctx_.assign(static_cast<size_t>(n), kv_handle{});
    constexpr int chunk = 512;
    for (int done = 0; done < depth; done += chunk) {
      const int len = std::min(chunk, depth - done);
      const auto toks = random_tokens(len);
      forward_batch b;
      b.add_sequence(&ctx_[0], toks.data(), toks.size(), done, false);
      if (auto ok = be_.forward(b, logits_); !ok) return ok.err();
    }
    depth_ = depth;
    for (int s = 1; s < n && depth > 0; ++s) {
      if (auto ok = be_.kv_pool().copy_tokens(be_.kv_pool(), ctx_[0], ctx_[s]); !ok) return ok.err();
    }
    return {};
  }

  /// Seconds for one forward of n rows of sequence 0 (logits for the last row only).
  expected<double> prompt(int n) {
    const auto toks = random_tokens(n);
    forward_batch b;
    b.add_sequence(&ctx_[0], toks.data(), toks.size(), depth_, false);
    return timed(b, 1);
  }

  /// Seconds for `steps` decode steps over the first `seqs` sequences (one row each, logits).
  expected<double> decode(int steps, int seqs) {
    double total = 0;
    forward_batch b;
    for (int i = 0; i < steps; ++i) {
      b.clear();
      const auto toks = random_tokens(seqs);
      for (int s = 0; s < seqs; ++s) b.add_sequence(&ctx_[s], &toks[s], 1, depth_ + i, true);
      const auto t0 = clock_type::now();
      if (auto ok = be_.forward(b, logits_); !ok) return ok.err();
      total += std::chrono::duration<double>(clock_type::now() - t0).count();
    }
    if (auto ok = rollback(seqs); !ok) return ok.err();
    return total;
  }

 private:
  expected<double> timed(const forward_batch& b, int seqs) {
    const auto t0 = clock_type::now();
    if (auto ok = be_.forward(b, logits_); !ok) return ok.err();
    const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
    if (auto ok = rollback(seqs); !ok) return ok.err();
    return s;
  }

  expected<void> rollback(int seqs) {
    for (int s = 0; s < seqs; ++s)
      if (auto ok = be_.kv_pool().truncate(ctx_[s], static_cast<uint32_t>(depth_)); !ok) return ok.err();
    return {};
  }

  std::vector<int32_t> random_tokens(int n) {
    std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(cfg_.n_vocab) - 1);
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& v : t) v = d(rng_);
    return t;
  }

  backend& be_;
  const model_config& cfg_;
  std::mt19937 rng_;
  std::vector<kv_handle> ctx_;
  int depth_ = 0;
  std::vector<float> logits_;
};

/// Bytes of weights one decode step reads: every layer matrix and the output head once, plus one
/// row of the token embedding (when the head is tied to it, the whole matrix is read anyway).
uint64_t decode_bytes_per_token(const llama_weights& w) {
  uint64_t total = w.output.row_bytes * w.output.n + w.tok_embd.row_bytes;
  for (const auto& l : w.layers)
    for (const auto* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) total += v->row_bytes * v->n;
  return total;
}

expected<std::vector<bench_result>> run_tests(backend& be, const model_config& cfg, const bench_spec& spec,
                                              bool progress) {
  std::vector<bench_result> results;
  bench_runner run(be, cfg);
  const int batch = spec.batch_rows > 1 ? spec.batch_rows : 1;
  const auto note = [&](const bench_result& r) {
    if (progress) std::fprintf(stderr, "  %-10s depth %-5d %9.2f t/s\n", r.test.c_str(), r.depth, r.mean());
  };
  for (int depth : spec.depth) {
    if (auto ok = run.make_context(depth, batch); !ok) return ok.err();
    for (int n : spec.prompt) {
      bench_result r = make_result("pp" + std::to_string(n), depth, 1);
      for (int rep = -1; rep < spec.reps; ++rep) {
        auto s = run.prompt(n);
        if (!s) return s.err();
        if (rep >= 0) r.tok_s.push_back(n / *s);
      }
      note(r);
      results.push_back(std::move(r));
    }
    if (spec.gen <= 0) continue;
    bench_result one = make_result("tg" + std::to_string(spec.gen), depth, 1);
    for (int rep = -1; rep < spec.reps; ++rep) {
      auto s = run.decode(spec.gen, 1);
      if (!s) return s.err();
      if (rep >= 0) one.tok_s.push_back(spec.gen / *s);
    }
    note(one);
    if (batch > 1) {
      bench_result many = make_result("tg" + std::to_string(spec.gen) + "x" + std::to_string(batch), depth, batch);
      for (int rep = -1; rep < spec.reps; ++rep) {
        auto s = run.decode(spec.gen, batch);
        if (!s) return s.err();
        if (rep >= 0) many.tok_s.push_back(static_cast<double>(spec.gen) * batch / *s);
      }
      // (seconds per B-row step) / (seconds per 1-row step)
      many.step_cost_vs_1row = batch * one.mean() / many.mean();
      results.push_back(std::move(one));
      note(many);
      results.push_back(std::move(many));
    } else {
      results.push_back(std::move(one));
    }
  }
  return results;
}

/// `flywheel bench --models A,B,...`: the same tests on several files (a quantization lever on
/// vs off) in one run. The models take turns, one timed run each per round (--reps rounds), so
/// a busy machine's drift falls on all of them alike; ratios are against the first file.
int compare_models(const arg_parser& args, const bench_spec& spec, const std::vector<std::string>& files) {
  auto cfg = model_session::load_config(args);
  if (!cfg) {
    std::fprintf(stderr, "bench: %s\n", cfg.err().what().c_str());
    return 2;
  }
  std::vector<runtime_parts> parts;
  for (const auto& f : files) {
    config c = *cfg;
    c.model.path = f;
    build_options bo;
    bo.build_draft = false;
    int longest = spec.gen;
    for (int n : spec.prompt) longest = std::max(longest, n);
    bo.kv_tokens = static_cast<uint32_t>(std::max(1, spec.batch_rows)) * static_cast<uint32_t>(longest + 64);
    auto p = build_runtime(std::move(c), bo);
    if (!p) {
      std::fprintf(stderr, "bench: %s\n", p.err().what().c_str());
      return 1;
    }
    parts.push_back(std::move(*p));
  }
  bench_spec one = spec;
  one.reps = 1;
  std::vector<std::vector<bench_result>> all(files.size());
  for (int round = 0; round < spec.reps; ++round)
    for (size_t i = 0; i < files.size(); ++i) {
      auto r = run_tests(*parts[i].device(), parts[i].m->config(), one, false);
      if (!r) {
        std::fprintf(stderr, "bench: %s: %s\n", files[i].c_str(), r.err().what().c_str());
        return 1;
      }
      if (all[i].empty()) all[i] = std::move(*r);
      else
        for (size_t t = 0; t < r->size(); ++t) all[i][t].tok_s.push_back((*r)[t].tok_s.front());
      std::fprintf(stderr, "bench: round %d/%d: %s done\n", round + 1, spec.reps, files[i].c_str());
    }
  nlohmann::json out = {{"threads", parts.front().threads()->size()}, {"cpu", cpu::host_features().describe()},
                        {"rounds", spec.reps}, {"baseline", files.front()}};
  auto& models = out["models"] = nlohmann::json::array();
  std::printf("| model | weights MiB | kernels |");
  for (const auto& r : all.front()) std::printf(" %s t/s | vs first |", r.test.c_str());
  std::printf("\n|---|---|---|");
  for (size_t t = 0; t < all.front().size(); ++t) std::printf("---|---|");
  std::printf("\n");
  for (size_t i = 0; i < files.size(); ++i) {
    std::string kernels;
    for (const auto& k : parts[i].device()->kernel_paths())
      if (k.weight_type != "attention") kernels += (kernels.empty() ? "" : ", ") + k.weight_type + " " + k.path;
    const double mib = parts[i].m->weights().matrix_bytes() / 1048576.0;
    std::printf("| %s | %.1f | %s |", files[i].c_str(), mib, kernels.c_str());
    nlohmann::json m = {{"model", files[i]}, {"matrix_mib", mib}, {"kernels", kernels}};
    for (size_t t = 0; t < all[i].size(); ++t) {
      const double ratio = all[i][t].mean() / all.front()[t].mean();
      std::printf(" %.1f ± %.1f | %.2fx |", all[i][t].mean(), all[i][t].stddev(), ratio);
      m[all[i][t].test] = {{"tok_s", all[i][t].mean()}, {"std", all[i][t].stddev()}, {"samples", all[i][t].tok_s},
                           {"vs_first", ratio}};
    }
    std::printf("\n");
    models.push_back(std::move(m));
  }
  if (args.has("out")) {
    std::ofstream f(args.str("out"));
    f << out.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "bench: cannot write %s\n", args.str("out").c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace

// `flywheel bench --server URL ...`: the load generator (bench_server.hpp).
static int bench_server_main(const arg_parser& args) {
  server_bench_options o;
  o.url = args.str("server");
  auto rate = args.number("rate");
  auto duration = args.number("duration");
  auto max_tokens = args.integer("max-tokens", 1);
  auto conc = args.has("concurrency") ? args.integer("concurrency", 0) : expected<int64_t>(int64_t{0});
  if (!rate || !duration || !max_tokens || !conc) {
    const auto& e = !rate ? rate.err() : !duration ? duration.err() : !max_tokens ? max_tokens.err() : conc.err();
    std::fprintf(stderr, "bench: %s (with --server, --concurrency is one cap on open requests)\n", e.message.c_str());
    return 2;
  }
  o.rate = *rate;
  o.duration_s = *duration;
  o.max_tokens = static_cast<int>(*max_tokens);
  o.concurrency = static_cast<int>(*conc);
  o.api_key = args.str("api-key");
  o.progress = true;
  auto r = run_server_bench(o);
  if (!r) {
    std::fprintf(stderr, "bench: %s\n", r.err().what().c_str());
    return 1;
  }
  if (args.has("out")) {
    if (FILE* f = std::fopen(args.str("out").c_str(), "w")) {
      std::fprintf(f, "%s\n", r->dump(1).c_str());
      std::fclose(f);
    } else {
      std::fprintf(stderr, "bench: cannot write %s\n", args.str("out").c_str());
      return 1;
    }
  }
  if (args.on("json")) {
    std::printf("%s\n", r->dump(1).c_str());
    return 0;
  }
  const auto& j = *r;
  auto p = [&](const char* k, const char* q) { return j[k][q].is_null() ? 0.0 : j[k][q].get<double>(); };
  std::printf("| rate | requests | errors | QPS | out tok/s | TTFT p50/p95/p99 ms | TPOT p50/p95/p99 ms | E2E p50/p99 ms |\n"
              "|---|---|---|---|---|---|---|---|\n");
  int errs = 0;
  for (const auto& [k, v] : j["errors"].items()) errs += v.get<int>();
  std::printf("| %.1f | %d | %d | %.2f | %.1f | %.0f / %.0f / %.0f | %.1f / %.1f / %.1f | %.0f / %.0f |\n",
              j["rate"].get<double>(), j["requests"].get<int>(), errs, j["qps"].get<double>(),
              j["output_tok_s"].get<double>(), p("ttft_ms", "p50"), p("ttft_ms", "p95"), p("ttft_ms", "p99"),
              p("tpot_ms", "p50"), p("tpot_ms", "p95"), p("tpot_ms", "p99"), p("e2e_ms", "p50"), p("e2e_ms", "p99"));
  return 0;
}

/// Prints (or with --json dumps) a workload result and writes it to --out.
int finish_workload(const arg_parser& args, const nlohmann::json& r, void (*print)(const nlohmann::json&)) {
  if (args.on("json")) std::printf("%s\n", r.dump(1).c_str());
  else print(r);
  if (args.has("out")) {
    std::FILE* f = std::fopen(args.str("out").c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "bench: cannot write %s\n", args.str("out").c_str());
      return 1;
    }
    std::fprintf(f, "%s\n", r.dump(1).c_str());
    std::fclose(f);
  }
  return 0;
}

/// `flywheel bench --workload nodes`: bench_nodes.hpp.
int bench_nodes_main(const arg_parser& args, runtime_parts& s) {
  nodes_bench_options o;
  auto reps = args.integer("reps");
  if (!reps || *reps < 1 || *reps > 1000) {
    std::fprintf(stderr, "bench: --reps in [1, 1000]\n");
    return 2;
  }
  o.reps = static_cast<int>(*reps);
  auto r = run_nodes_bench(s, o);
  if (!r) {
    std::fprintf(stderr, "bench: %s\n", r.err().what().c_str());
    return 1;
  }
  return finish_workload(args, *r, print_nodes_bench);
}

/// `flywheel bench --workload gpu`: bench_gpu.hpp.
int bench_gpu_main(const arg_parser& args, runtime_parts& s) {
  gpu_bench_options o;
  for (const auto& d : s.cfg.devices)
    if (d.kind == device_kind::cuda) o.device = static_cast<int>(d.id);
  auto r = run_gpu_bench(s, o);
  if (!r) {
    std::fprintf(stderr, "bench: %s\n", r.err().what().c_str());
    return 1;
  }
  return finish_workload(args, *r, print_gpu_bench);
}

/// `flywheel bench --workload mixed`: bench_mixed.hpp.
int bench_mixed_main(const arg_parser& args, runtime_parts& s) {
  if (args.str("workload") == "nodes") return bench_nodes_main(args, s);
  if (args.str("workload") == "gpu") return bench_gpu_main(args, s);
  if (args.str("workload") != "mixed") {
    std::fprintf(stderr, "bench: --workload '%s' is not known; allowed: mixed, nodes, gpu\n", args.str("workload").c_str());
    return 2;
  }
  mixed_bench_options o;
  auto dur = args.number("duration");
  auto rate = args.number("chat-rate");
  auto lrate = args.number("long-rate");
  if (!dur || !rate || !lrate || *dur <= 0 || *dur > 3600 || *rate < 0 || *rate > 1000 || *lrate < 0 || *lrate > 100) {
    std::fprintf(stderr, "bench: --duration in (0, 3600], --chat-rate in [0, 1000], --long-rate in [0, 100]\n");
    return 2;
  }
  o.duration_s = *dur;
  o.short_rate = *rate;
  o.long_rate = *lrate;
  auto chunk_ms = args.number("chunk-ms");
  if (!chunk_ms || *chunk_ms < 0 || *chunk_ms > 60000) {
    std::fprintf(stderr, "bench: --chunk-ms in [0, 60000]\n");
    return 2;
  }
  o.logical_chunk_ms = *chunk_ms;
  auto r = run_mixed_bench(s, o);
  if (!r) {
    std::fprintf(stderr, "bench: %s\n", r.err().what().c_str());
    return 1;
  }
  return finish_workload(args, *r, print_mixed_bench);
}

int cmd_bench(int argc, char** argv) {
  if (argc > 0 && std::string(argv[0]) == "ablation") return cmd_bench_ablation(argc - 1, argv + 1);
  if (argc > 0 && std::string(argv[0]) == "soak") return cmd_bench_soak(argc - 1, argv + 1);
  arg_parser args("bench");
  model_session::declare_flags(args);
  args.option("prompt-tokens", "prompt lengths to time as one forward each (comma list; empty = none)", "128,512")
      .option("gen-tokens", "decode steps per tg test (0 = none)", "128")
      .option("depth", "context tokens before each test (comma list)", "0")
      .option("batch-rows", "sequences decoded together in the tgNxB test (0 or 1 = none)", "16")
      .option("reps", "timed runs per test, after one untimed warm-up run", "5")
      .option("concurrency", "serving mode: requests at once through the actor runtime (comma list, e.g. 1,4,16); "
                             "uses the first --prompt-tokens and --gen-tokens")
      .flag("spec", "serving mode: decode with the configured draft (--draft, [speculative])")
      .option("server", "load a running OpenAI-compatible server instead, e.g. http://127.0.0.1:8080 (no model is loaded)")
      .option("rate", "--server: mean request arrivals per second (Poisson)", "4")
      .option("duration", "--server / --workload mixed: seconds of arrivals", "30")
      .option("max-tokens", "--server: max_tokens per request", "64")
      .option("api-key", "--server: sent as Authorization: Bearer KEY")
      .option("workload", "mixed: prefill/decode separation - Poisson short chats, long prompts and long "
                          "generations through co-located, logical and physical configurations in one run; "
                          "nodes: several machines - KV transfer between a prefill and a decode node over "
                          "loopback vs raw TCP, and the transfer share of 256- and 1024-token generations; "
                          "gpu: copy bandwidth, each weight format's product at Llama-3-8B shapes, and the "
                          "model's decode step against its weights / bandwidth (a CUDA device)")
      .option("chat-rate", "--workload mixed: short chat arrivals per second (Poisson)", "2")
      .option("long-rate", "--workload mixed: long-prompt arrivals per second", "0.1")
      .option("chunk-ms", "--workload mixed: the logical-budget configuration's [scheduler] prefill_chunk_ms "
                          "(0 = leave it out)", "20")
      .option("models", "compare several GGUF files (comma list, e.g. a Q8_0 and a W8A8 file) in one run: ratios vs the first")
      .option("out", "--server / --models / --workload: also write the JSON result to this file")
      .flag("json", "print one JSON object");
  if (auto done = args.parse_or_exit_code(argc, argv)) return *done;
  if (args.has("server")) return bench_server_main(args);
  bench_spec spec;
  auto prompt = int_list(args.str("prompt-tokens"), "prompt-tokens", 1);
  auto depth = int_list(args.str("depth"), "depth", 0);
  auto gen = args.integer("gen-tokens");
  auto batch = args.integer("batch-rows");
  auto reps = args.integer("reps");
  if (!prompt || !depth) {
    std::fprintf(stderr, "bench: %s\n", (!prompt ? prompt.err() : depth.err()).message.c_str());
    return 2;
  }
  if (!gen || !batch || !reps || *gen < 0 || *gen > 65536 || *batch < 0 || *batch > 1024 || *reps < 1 || *reps > 1000) {
    std::fprintf(stderr, "bench: --gen-tokens in [0, 65536], --batch-rows in [0, 1024], --reps in [1, 1000]\n");
    return 2;
  }
  spec.prompt = *prompt;
  spec.depth = depth->empty() ? std::vector<int>{0} : *depth;
  spec.gen = static_cast<int>(*gen);
  spec.batch_rows = static_cast<int>(*batch);
  spec.reps = static_cast<int>(*reps);
  const bool json = args.on("json");
  if (args.has("models")) {
    const std::vector<std::string> files = args.list("models");
    if (files.empty()) {
      std::fprintf(stderr, "bench: --models expects a comma list of GGUF files\n");
      return 2;
    }
    return compare_models(args, spec, files);
  }

  auto s = model_session::open(args, false);
  if (!s) {
    std::fprintf(stderr, "bench: %s\n", s.err().what().c_str());
    return 1;
  }
  if (args.has("workload")) return bench_mixed_main(args, *s);
  if (args.has("concurrency")) {
    auto levels = int_list(args.str("concurrency"), "concurrency", 1);
    if (!levels || levels->empty()) {
      std::fprintf(stderr, "bench: --concurrency expects a comma list of positive integers\n");
      return 2;
    }
    concurrency_bench_options co;
    co.levels = *levels;
    co.prompt_tokens = spec.prompt.empty() ? 128 : spec.prompt.front();
    co.gen_tokens = spec.gen > 0 ? spec.gen : 128;
    co.speculative = args.on("spec");
    auto r = run_concurrency_bench(*s, co);
    if (!r) {
      std::fprintf(stderr, "bench: %s\n", r.err().what().c_str());
      return 1;
    }
    if (json) {
      nlohmann::json out = {{"model", s->m->file().path()}, {"threads", s->threads()->size()}, {"results", *r}};
      std::printf("%s\n", out.dump(1).c_str());
      return 0;
    }
    // aggregate: all completion tokens over the whole run (prompt processing included); decode:
    // tokens per second while every request of the level was decoding at once.
    std::printf("| concurrency | aggregate t/s | decode t/s | TTFT p50 ms | TTFT p99 ms | TPOT p50 ms | TPOT p99 ms |"
                " aggregate vs 1 | decode vs 1 |\n");
    std::printf("|-------------|---------------|------------|-------------|-------------|-------------|-------------|"
                "----------------|-------------|\n");
    const double base = (*r)[0]["aggregate_tok_s"].get<double>();
    const double base_decode = (*r)[0]["decode_tok_s"].get<double>();
    for (const auto& l : *r)
      std::printf("| %11d | %13.1f | %10.1f | %11.1f | %11.1f | %11.2f | %11.2f | %13.2fx | %10.2fx |\n",
                  l["concurrency"].get<int>(), l["aggregate_tok_s"].get<double>(), l["decode_tok_s"].get<double>(),
                  l["ttft_ms_p50"].get<double>(), l["ttft_ms_p99"].get<double>(), l["tpot_ms_p50"].get<double>(),
                  l["tpot_ms_p99"].get<double>(), l["aggregate_tok_s"].get<double>() / base,
                  base_decode > 0 ? l["decode_tok_s"].get<double>() / base_decode : 0.0);
    return 0;
  }
  const model_config& cfg = s->m->config();
  const int max_depth = *std::max_element(spec.depth.begin(), spec.depth.end());
  int longest = spec.gen;
  for (int n : spec.prompt) longest = std::max(longest, n);
  if (static_cast<uint32_t>(max_depth + longest) > s->n_ctx) {
    std::fprintf(stderr, "bench: depth %d + %d tokens exceeds the context size %u (raise --ctx-size)\n", max_depth,
                 longest, s->n_ctx);
    return 2;
  }
  // A backend whose KV pool holds every sequence of the batched test at full length.
  const int seqs = std::max(1, spec.batch_rows);
  const uint32_t block = s->cfg.kv_cache.block_tokens;
  s->draft.reset();  // the draft may hold the old backend's threads or KV
  s->devices = device_set{};
  auto fresh = s->make_backend(static_cast<uint32_t>(seqs) * (static_cast<uint32_t>(max_depth + longest) + block));
  if (!fresh) {
    std::fprintf(stderr, "bench: %s\n", fresh.err().what().c_str());
    return 1;
  }
  s->devices = device_set(std::move(*fresh));
  backend& be = *s->device();
  const int threads = s->threads()->size();

  const uint64_t bytes_per_token = decode_bytes_per_token(s->m->weights());
  cpu::stream_result bw;
  {
    cpu::thread_pool pool(threads);
    bw = cpu::measure_read_bandwidth(pool, bytes_per_token, 5);
  }

  std::vector<std::string> types, paths;
  for (ggml_type t : s->m->weights().matrix_types()) types.emplace_back(type_traits(t).name);
  for (const auto& k : be.kernel_paths())
    paths.push_back(k.weight_type + ": " + k.path + (k.fallback ? " (fallback: " + k.note + ")" : ""));
  const std::string path = s->m->file().path();
  if (!json) {
    std::fprintf(stderr, "bench: %s, %d threads, %s\n", path.c_str(), threads, cpu::host_features().describe().c_str());
    for (const auto& p : paths) std::fprintf(stderr, "kernel: %s\n", p.c_str());
  }
  auto results = run_tests(be, cfg, spec, !json);
  if (!results) {
    std::fprintf(stderr, "bench: %s\n", results.err().what().c_str());
    return 1;
  }
  const double bound = bw.best_gb_s * 1e9 / static_cast<double>(bytes_per_token);

  if (json) {
    nlohmann::json out;
    out["model"] = path;
    out["weight_types"] = types;
    out["kernel_paths"] = paths;
    out["threads"] = threads;
    out["simd"] = cpu::to_string(cpu::best_simd_level());
    out["cpu"] = cpu::host_features().describe();
    auto& list = out["results"] = nlohmann::json::array();
    for (const auto& r : *results) {
      nlohmann::json j = {{"test", r.test}, {"depth", r.depth}, {"threads", threads}, {"rows", r.rows},
                          {"tok_s", r.mean()}, {"std", r.stddev()}, {"samples", r.tok_s}};
      if (r.rows > 1) j["step_cost_vs_1row"] = r.step_cost_vs_1row;
      list.push_back(std::move(j));
    }
    out["decode_bound"] = {{"model_bytes_per_token", bytes_per_token},
                           {"read_gb_s", bw.best_gb_s},
                           {"read_gb_s_mean", bw.mean_gb_s},
                           {"read_buffer_bytes", bw.bytes},
                           {"bound_tok_s", bound}};
    std::printf("%s\n", out.dump(1).c_str());
    return 0;
  }
  std::printf("| test       | depth | threads |            t/s | notes\n");
  std::printf("|------------|-------|---------|----------------|------\n");
  for (const auto& r : *results) {
    std::string notes;
    if (r.rows > 1) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%d-row step costs %.2fx a 1-row step", r.rows, r.step_cost_vs_1row);
      notes = buf;
    }
    std::printf("| %-10s | %5d | %7d | %8.2f ± %5.2f | %s\n", r.test.c_str(), r.depth, threads, r.mean(),
                r.stddev(), notes.c_str());
  }
  std::printf("decode bound: %.1f MiB of weights per token, read bandwidth %.1f GB/s (%d threads, %.0f MiB "
              "buffer) -> at most %.0f t/s at depth 0\n",
              bytes_per_token / 1048576.0, bw.best_gb_s, bw.threads, bw.bytes / 1048576.0, bound);
  return 0;
}

}  // namespace fw::cli
