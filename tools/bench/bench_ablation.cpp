#include "tools/bench/bench_ablation.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "kernels/cpu/cpu_features.hpp"
#include "runtime/config/config.hpp"
#include "runtime/metrics/metric_series.hpp"
#include "tools/bench/ablation_report.hpp"
#include "tools/bench/server_process.hpp"
#include "tools/bench/workload_file.hpp"

extern char** environ;

namespace fw::cli {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using overrides = std::vector<std::pair<std::string, std::string>>;

/// Runs exe with args, its output on ours; the exit code (127: could not start).
int run_child(const std::string& exe, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), environ) != 0) return 127;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string hex_hash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 8);
}

expected<void> write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) return make_error(errc::io_error, "cannot write " + p.string());
  return {};
}

struct variant {
  std::string name, label;
  bool quant = false, spec = false, pd = false;
};

std::vector<variant> variants(const std::string& quant_name, const std::string& draft, const std::string& pd_kind) {
  return {{"baseline", "baseline (16-bit, co-located, no draft)", false, false, false},
          {"quant", "+quantization (" + quant_name + ") - stage 1", true, false, false},
          {"spec", "+speculation (" + draft + ")", false, true, false},
          {"pd", "+PD separation (" + pd_kind + ")", false, false, true},
          {"quant+spec", "quant + spec - stage 2", true, true, false},
          {"quant+pd", "quant + PD (all but speculation)", true, false, true},
          {"all", "all three - stage " + std::string(pd_kind == "logical" ? "3" : "4"), true, true, true}};
}

/// What the server's /metrics added between two reads.
json server_figures(const std::map<std::string, double>& before, const std::map<std::string, double>& after) {
  auto d = [&](const std::string& name) {
    const auto a = after.find(name);
    const auto b = before.find(name);
    return (a == after.end() ? 0.0 : a->second) - (b == before.end() ? 0.0 : b->second);
  };
  json out = json::object();
  const double drafted = d(series::spec_decode_num_draft_tokens.name);
  out["draft_tokens"] = drafted;
  out["acceptance"] = drafted > 0 ? json(d(series::spec_decode_num_accepted_tokens.name) / drafted) : json(nullptr);
  // The share of prompt tokens the prefix cache served (a lookup that hits only the shared system
  // prompt counts for little).
  const double prompt = d(series::prompt_tokens.name);
  out["prefix_cache_hit_rate"] =
      d(series::prefix_cache_queries.name) > 0 && prompt > 0 ? json(d(series::prefix_cache_hit_tokens.name) / prompt) : json(nullptr);
  const std::string p2d = series::prefill_to_decode_latency.name;
  const double n = d(p2d + "_count");
  out["prefill_to_decode_ms"] = n > 0 ? json(1000 * d(p2d + "_sum") / n) : json(nullptr);
  return out;
}

/// The warm-up: two short requests one after the other, not measured.
std::vector<traced_request> warmup_trace(const workload_file& w) {
  std::vector<traced_request> t;
  for (const auto& l : w.lines) {
    if (l.cls != "long" && t.size() < 2) t.push_back({0, l.cls, l.messages, std::min(l.max_tokens, 16)});
  }
  return t;
}

/// The trace of each rate, one after the other through the workload's lines from start_line.
struct rate_trace {
  double rate = 0;
  std::vector<traced_request> requests;
};

std::vector<rate_trace> traces_of(const ablation_options& o, const workload_file& w, const std::vector<double>& rates,
                                  uint64_t seed) {
  std::vector<rate_trace> out;
  size_t line = seed % w.lines.size();
  for (size_t i = 0; i < rates.size(); ++i) {
    bool wrapped = false;
    out.push_back({rates[i], w.trace(rates[i], o.duration_s, seed + i, &line, &wrapped)});
    if (wrapped)
      std::fprintf(stderr, "bench ablation: %s has fewer lines than %.2f req/s for %.0f s take: lines repeat\n",
                   w.path.c_str(), rates[i], o.duration_s);
  }
  return out;
}

/// Replays each rate's trace (ascending) against url. server: flywheel's own (for /metrics), or
/// null (a peer).
expected<json> run_rates(const ablation_options& o, const workload_file& w, const std::vector<rate_trace>& traces,
                         const std::string& url, const std::string& label, server_process* server) {
  replay_options ro;
  ro.url = url;
  ro.temperature = o.temperature;
  ro.drain_s = o.drain_s;
  ro.progress = false;
  if (auto warm = replay_trace(ro, warmup_trace(w)); !warm) return warm.err();
  ro.progress = true;
  json rates = json::array();
  double best = 0;
  auto before = server ? server->metrics() : std::map<std::string, double>{};
  for (const auto& [rate, trace] : traces) {
    char name[160];
    std::snprintf(name, sizeof name, "%-11s %5.2f req/s", label.c_str(), rate);
    ro.label = name;
    auto r = replay_trace(ro, trace);
    if (!r) return r.err();
    json one = {{"rate", rate}, {"wall_s", r->wall_s}, {"model", r->model}, {"summary", summarize(*r, o.target)}};
    json each = json::array();  // every request, in arrival order, for a closer look
    auto outcomes = r->outcomes;
    std::sort(outcomes.begin(), outcomes.end(), [](const auto& a, const auto& b) { return a.at_s < b.at_s; });
    for (const auto& x : outcomes)
      each.push_back({{"at_s", x.at_s}, {"class", x.cls}, {"status", x.status}, {"ok", x.ok}, {"ttft_ms", x.ttft_ms},
                      {"e2e_ms", x.e2e_ms}, {"tokens", x.tokens}});
    one["requests"] = std::move(each);
    if (server) {
      const auto after = server->metrics();
      one["server"] = server_figures(before, after);
      before = after;
    }
    // The highest rate within the SLO share (rates run in rising order, every one of them: a
    // rate just past a configuration's knee says how steep it is).
    if (one["summary"]["all"].value("slo_attainment", 0.0) >= o.slo_share) best = rate;
    rates.push_back(std::move(one));
  }
  return json{{"rates", rates}, {"max_rate_meeting_slo", best}};
}

/// "AMD EPYC (avx2 fma ... avx512vnni)": the CPU's model name and the features the kernels use.
std::string host_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      name = line.substr(line.find(':') + 1);
      name.erase(0, name.find_first_not_of(' '));
      break;
    }
  return (name.empty() ? std::string("unknown CPU") : name) + " (" + cpu::host_features().describe() + ")";
}

/// The 16-bit reference weights and the quantized file (made once and kept in cache_dir), and the
/// quantized file's perplexity against the 16-bit weights on the workload's texts.
struct weights {
  std::string f16, quant;
  json quality = nullptr;
};

expected<weights> prepare_weights(const ablation_options& o, const workload_file& w, const std::string& model,
                                  bool quant_is_file, bool need_f16, bool need_quant) {
  const std::string stem = fs::path(model).stem().string();
  weights out;
  const std::string& f16 = out.f16 = (fs::path(o.cache_dir) / (stem + ".f16.gguf")).string();
  if ((need_f16 || (need_quant && o.quality_chunks > 0)) && !fs::exists(f16)) {
    std::fprintf(stderr, "bench ablation: writing the 16-bit reference weights %s\n", f16.c_str());
    if (run_child(o.exe, {"quantize", "--config", o.config_path, "--model", model, "--scheme", "f16", "--out", f16}) != 0)
      return make_error(errc::io_error, "flywheel quantize --scheme f16 failed (its message is above)");
  }
  std::string& quant_file = out.quant = o.quant;
  json& quality = out.quality;
  if (need_quant && !quant_is_file) {
    const std::string queries = w.user_queries();
    const fs::path calib = fs::path(o.out_dir) / "calibration.txt";
    if (auto ok = write_file(calib, queries); !ok) return ok.err();
    quant_file = (fs::path(o.cache_dir) / (stem + "." + o.quant + "." + hex_hash(queries + o.quant) + ".gguf")).string();
    if (!fs::exists(quant_file)) {
      std::fprintf(stderr, "bench ablation: quantizing to %s, calibrated on the workload's %zu queries: %s\n", o.quant.c_str(),
                   w.lines.size(), quant_file.c_str());
      if (run_child(o.exe, {"quantize", "--config", o.config_path, "--model", model, "--scheme", o.quant, "--calib",
                            calib.string(), "--out", quant_file}) != 0)
        return make_error(errc::io_error, "flywheel quantize --scheme " + o.quant + " failed (its message is above)");
    }
  } else if (need_quant && !fs::exists(quant_file)) {
    return make_error(errc::invalid_argument, "--quant " + quant_file + ": no such file");
  }
  if (need_quant && o.quality_chunks > 0) {
    std::string text = w.texts_of("long");
    if (text.empty()) text = w.user_queries();
    const fs::path heldout = fs::path(o.out_dir) / "quality_text.txt";
    const fs::path report = fs::path(o.out_dir) / "quality.json";
    if (auto ok = write_file(heldout, text); !ok) return ok.err();
    std::fprintf(stderr, "bench ablation: perplexity of %s against the 16-bit weights on the workload's texts\n",
                 quant_file.c_str());
    if (run_child(o.exe, {"eval", "--config", o.config_path, "--model", quant_file, "--ref", f16, "--text", heldout.string(),
                          "--chunks", std::to_string(o.quality_chunks), "--json", report.string()}) == 0) {
      std::ifstream in(report);
      quality = json::parse(in, nullptr, false);
      if (quality.is_discarded()) quality = nullptr;
    }
    if (quality.is_null()) std::fprintf(stderr, "bench ablation: the perplexity check failed; the table goes on without it\n");
  }

  return out;
}

}  // namespace

const std::vector<std::string>& ablation_config_names() {
  static const std::vector<std::string> names = {"baseline", "quant", "spec", "pd", "quant+spec", "quant+pd", "all"};
  return names;
}

expected<json> run_ablation(const ablation_options& o) {
  auto base = config::from_file(o.config_path);
  if (!base) return base.err();
  auto w = workload_file::load(o.workload_path);
  if (!w) return w.err();
  if (o.rates.empty()) return make_error(errc::invalid_argument, "no rate given");
  for (const auto& n : o.only)
    if (std::find(ablation_config_names().begin(), ablation_config_names().end(), n) == ablation_config_names().end())
      return make_error(errc::invalid_argument, "--only: unknown configuration '" + n + "' (baseline, quant, spec, pd, quant+spec, quant+pd, all)");
  std::vector<double> rates = o.rates;
  std::sort(rates.begin(), rates.end());
  std::error_code ec;
  fs::create_directories(fs::path(o.out_dir) / "configs", ec);
  fs::create_directories(fs::path(o.out_dir) / "logs", ec);
  fs::create_directories(o.cache_dir, ec);
  if (ec) return make_error(errc::io_error, "cannot create " + o.out_dir + " or " + o.cache_dir + ": " + ec.message());

  const std::string model = base->model.path;
  const bool config_drafts = base->speculative.draft != draft_kind::none;
  const std::string draft_name = !o.draft.empty() ? o.draft : config_drafts ? base->speculative.draft_name() : "ngram";
  bool has_prefill = false, has_offload = false;
  for (const auto& d : base->devices) {
    has_prefill |= d.role == device_role::prefill;
    has_offload |= d.role == device_role::offload;
  }
  const std::string pd_kind = std::string(has_prefill ? "physical" : "logical") + (has_offload ? " + offload" : "");
  const bool quant_is_file = o.quant.size() > 5 && o.quant.substr(o.quant.size() - 5) == ".gguf";
  if (!quant_is_file && o.quant != "w8a8" && o.quant != "w4a16")
    return make_error(errc::invalid_argument, "--quant: w8a8, w4a16 or a .gguf file, not '" + o.quant + "'");
  auto all = variants(quant_is_file ? fs::path(o.quant).filename().string() : o.quant, draft_name, pd_kind);
  std::vector<variant> run;
  for (const auto& v : all)
    if (o.only.empty() || std::find(o.only.begin(), o.only.end(), v.name) != o.only.end()) run.push_back(v);
  const bool need_f16 = std::any_of(run.begin(), run.end(), [](const variant& v) { return !v.quant; });
  const bool need_quant = std::any_of(run.begin(), run.end(), [](const variant& v) { return v.quant; });

  auto prepared = prepare_weights(o, *w, model, quant_is_file, need_f16, need_quant);
  if (!prepared) return prepared.err();
  const std::string& f16 = prepared->f16;
  const std::string& quant_file = prepared->quant;
  const json& quality = prepared->quality;

  // One trace per rate for every row: each rate's lines follow the previous rate's (from a line
  // the seed picks), so neither a row's own server nor a long-running peer can serve a prompt
  // from its cache of an earlier rate or run.
  const uint64_t seed = o.seed ? o.seed : std::random_device{}();
  const auto traces = traces_of(o, *w, rates, seed);
  json configs = json::array();
  for (const auto& v : run) {
    config c = *base;
    overrides ov = {{"model.path", v.quant ? quant_file : f16}, {"rollout.enabled", "false"}, {"server.api_key", ""}};
    if (v.spec) {
      ov.push_back({"speculative.draft", draft_name});
      if (!config_drafts || !o.draft.empty()) ov.push_back({"speculative.k", "auto"});
    } else {
      ov.push_back({"speculative.draft", "none"});
    }
    if (v.pd) {
      ov.push_back({"scheduler.decode_priority", "true"});
      ov.push_back({"scheduler.prefill_order", "shortest"});
    } else {
      // Co-located: whole prompts, first come first served, no prefix cache, one device.
      ov.insert(ov.end(), {{"scheduler.decode_priority", "false"}, {"scheduler.prefill_order", "fifo"},
                           {"scheduler.prefill_chunk", "65536"}, {"scheduler.prefill_chunk_ms", "0"},
                           {"kv_cache.prefix_cache_share", "0"}});
      device_section one;
      for (const auto& d : base->devices)
        if (d.role == device_role::both || d.role == device_role::decode) one = d;
      one.role = device_role::both;
      c.devices = {one};
    }
    if (auto ok = c.set_all(ov); !ok) return make_error(errc::invalid_argument, v.name + ": " + ok.err().message);
    const fs::path toml = fs::path(o.out_dir) / "configs" / (v.name + ".toml");
    if (auto ok = write_file(toml, "# flywheel bench ablation: " + v.label + "\n" + c.to_toml()); !ok) return ok.err();
    const std::string log = (fs::path(o.out_dir) / "logs" / (v.name + ".log")).string();
    std::fprintf(stderr, "bench ablation: %s: starting flywheel serve --config %s\n", v.label.c_str(), toml.string().c_str());
    auto server = server_process::start(o.exe, toml.string(), log);
    if (!server) {
      // A configuration this device or build cannot serve (e.g. a weight format without a kernel
      // on it): the row says why and the others run.
      std::fprintf(stderr, "bench ablation: %s did not start: %s\n", v.label.c_str(), server.err().what().c_str());
      configs.push_back({{"name", v.name}, {"label", v.label}, {"config", toml.string()}, {"log", log},
                         {"error", server.err().message.substr(0, 400)}, {"rates", json::array()}});
      continue;
    }
    auto r = run_rates(o, *w, traces, server->url(), v.name, &*server);
    if (!r) return r.err();
    const double peak = server->peak_rss_mib();
    server->stop();
    json entry = {{"name", v.name}, {"label", v.label}, {"config", toml.string()}, {"log", log}, {"peak_rss_mib", peak},
                  {"levers", {{"weights", v.quant ? fs::path(quant_file).filename().string() : "f16"},
                              {"draft", v.spec ? draft_name : "none"},
                              {"pd", v.pd ? pd_kind : "co-located"}}}};
    entry.update(*r);
    configs.push_back(std::move(entry));
  }
  for (const auto& url : o.peers) {
    std::fprintf(stderr, "bench ablation: peer %s\n", url.c_str());
    auto r = run_rates(o, *w, traces, url, "peer", nullptr);
    if (!r) return make_error(r.err().code, "--peer " + url + ": " + r.err().message);
    json entry = {{"name", "peer " + url}, {"label", "peer " + url}, {"peer", true}, {"peak_rss_mib", nullptr},
                  {"levers", {{"weights", "its own"}, {"draft", "its own"}, {"pd", "its own"}}}};
    entry.update(*r);
    configs.push_back(std::move(entry));
  }
  json out = {{"host", host_name()},
              {"config", o.config_path},
              {"threads", base->compute.threads},
              {"workload", o.workload_path},
              {"workload_lines", w->lines.size()},
              {"duration_s", o.duration_s},
              {"rates", rates},
              {"slo", {{"ttft_ms", o.target.ttft_ms}, {"tpot_ms", o.target.tpot_ms}, {"share", o.slo_share}}},
              {"temperature", o.temperature},
              {"seed", seed},
              {"quality", quality},
              {"configs", configs}};
  out["ratios"] = ablation_ratios(out);
  return out;
}

}  // namespace fw::cli
