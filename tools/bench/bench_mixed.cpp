#include "tools/bench/bench_mixed.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include "actors/engine.hpp"
#include "tools/bench/percentile.hpp"

namespace fw::cli {
namespace {

using clock_type = std::chrono::steady_clock;

enum class kind { chat, long_prompt, long_generation };
const char* kind_name(kind k) { return k == kind::chat ? "short" : k == kind::long_prompt ? "long-prompt" : "long-gen"; }

struct arrival {
  double t = 0;
  kind k = kind::chat;
  std::vector<int32_t> prompt;
  int gen = 0;
};

struct outcome {
  bool ok = false;
  double submit_s = 0, first_s = -1, end_s = 0;
  std::vector<double> token_s;
  double ttft_ms = 0, tpot_ms = 0;
  uint32_t tokens = 0;
};

std::vector<int32_t> random_prompt(std::mt19937_64& rng, int n, uint32_t n_vocab) {
  std::uniform_int_distribution<int32_t> tok(100, static_cast<int32_t>(n_vocab) - 100);
  std::vector<int32_t> p(static_cast<size_t>(std::max(n, 2)));
  for (auto& t : p) t = tok(rng);
  return p;
}

std::vector<arrival> schedule(const mixed_bench_options& o, uint32_t n_vocab) {
  std::mt19937_64 rng(o.seed);
  std::vector<arrival> a;
  for (int i = 0; i < o.long_generations; ++i)
    a.push_back({0.0, kind::long_generation, random_prompt(rng, o.short_prompt, n_vocab), o.long_generation_tokens});
  auto poisson = [&](double rate, kind k, int prompt, int gen, bool vary) {
    if (rate <= 0) return;
    std::exponential_distribution<double> gap(rate);
    std::uniform_real_distribution<double> scale(0.5, 1.5);
    for (double t = gap(rng); t < o.duration_s; t += gap(rng))
      a.push_back({t, k, random_prompt(rng, vary ? static_cast<int>(prompt * scale(rng)) : prompt, n_vocab), gen});
  };
  poisson(o.short_rate, kind::chat, o.short_prompt, o.short_gen, true);
  // Long prompts evenly spaced (with jitter), so that every run of a given length has them.
  if (o.long_rate > 0) {
    std::uniform_real_distribution<double> jitter(-0.25, 0.25);
    const double gap = 1.0 / o.long_rate;
    for (double t = gap / 2; t < o.duration_s; t += gap)
      a.push_back({std::max(0.0, t + jitter(rng) * gap), kind::long_prompt, random_prompt(rng, o.long_prompt, n_vocab), o.long_gen});
  }
  std::stable_sort(a.begin(), a.end(), [](const arrival& x, const arrival& y) { return x.t < y.t; });
  return a;
}

sampling_params params_for(int gen) {
  sampling_params p;
  p.temperature = 0;
  p.max_tokens = gen;
  p.ignore_eos = true;
  return p;
}

/// Replays the arrivals against a running engine; one outcome per arrival.
std::vector<outcome> replay(actors::engine& e, const std::vector<arrival>& arrivals) {
  std::vector<outcome> out(arrivals.size());
  std::vector<std::promise<void>> done(arrivals.size());
  std::mutex m;
  const auto t0 = clock_type::now();
  auto since = [t0] { return std::chrono::duration<double>(clock_type::now() - t0).count(); };
  for (size_t i = 0; i < arrivals.size(); ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(arrivals[i].t)));
    out[i].submit_s = since();
    e.submit(arrivals[i].prompt, params_for(arrivals[i].gen), [&, i](const actors::stream_event& ev) {
      const double t = since();
      std::lock_guard l(m);
      if (ev.kind == static_cast<uint8_t>(actors::stream_kind::token)) {
        if (out[i].first_s < 0) out[i].first_s = t;
        out[i].token_s.insert(out[i].token_s.end(), ev.tokens.size(), t);
        return;
      }
      out[i].ok = ev.kind == static_cast<uint8_t>(actors::stream_kind::done);
      out[i].end_s = t;
      out[i].ttft_ms = ev.ttft_ms;
      out[i].tpot_ms = ev.tpot_ms;
      out[i].tokens = ev.completion_tokens;
      done[i].set_value();
    });
  }
  for (auto& d : done) d.get_future().wait();
  return out;
}

struct variant {
  std::string name;
  config cfg;
};

std::vector<variant> variants(const config& base, const mixed_bench_options& o) {
  std::vector<variant> v;
  const unsigned hw = std::thread::hardware_concurrency();
  device_section one;
  one.role = device_role::both;
  one.threads = base.compute.threads;
  {
    config c = base;
    c.devices = {one};
    c.scheduler.decode_priority = false;
    c.scheduler.prefill_order = prefill_order_type::fifo;
    c.scheduler.prefill_chunk = 1 << 16;  // a whole prompt per forward
    v.push_back({"co-located", c});
  }
  {
    config c = base;
    c.devices = {one};
    c.scheduler.decode_priority = true;
    c.scheduler.prefill_chunk = o.logical_chunk;
    v.push_back({"logical", c});
    if (o.logical_chunk_ms > 0) {
      c.scheduler.prefill_chunk = 512;
      c.scheduler.prefill_chunk_ms = o.logical_chunk_ms;
      v.push_back({"logical-budget", c});
    }
  }
  {
    config c = base;
    device_section pre, dec;
    pre.id = 0;
    pre.role = device_role::prefill;
    dec.id = 1;
    dec.role = device_role::decode;
    const int total = std::max(2, base.compute.threads > 0 ? base.compute.threads : static_cast<int>(hw));
    pre.threads = total / 2;
    dec.threads = total - total / 2;
    if (hw >= static_cast<unsigned>(total))
      for (int i = 0; i < total; ++i) (i < pre.threads ? pre.cores : dec.cores).push_back(i);
    c.devices = {pre, dec};
    c.scheduler.decode_priority = true;
    v.push_back({"physical", c});
    // Offload: the same split, but device 0 prefills and decodes (logical) and long generations
    // finish on device 1.
    config d = base;
    device_section both = pre, off = dec;
    both.role = device_role::both;
    off.role = device_role::offload;
    d.devices = {both, off};
    d.scheduler.decode_priority = true;
    d.scheduler.prefill_chunk = o.logical_chunk;
    d.scheduler.offload_after_tokens = static_cast<uint32_t>(std::max(o.short_gen, 1) * 2);
    d.scheduler.offload_below_free_share = 1.0;
    v.push_back({"offload", d});
  }
  return v;
}

nlohmann::json summarize(const std::string& name, const std::vector<arrival>& a, const std::vector<outcome>& r,
                         const actors::scheduler_stats& st, const mixed_bench_options& o) {
  std::vector<double> ttft, tpot, itl, long_ttft, e2e_long_gen;
  size_t ok = 0, failed = 0, good = 0;
  double last_end = 0, e2e_total = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto& x = r[i];
    if (!x.ok) {
      ++failed;
      continue;
    }
    ++ok;
    last_end = std::max(last_end, x.end_s);
    e2e_total += x.end_s - x.submit_s;
    if (x.ttft_ms <= o.slo_ttft_s * 1000 && x.tpot_ms <= o.slo_tpot_s * 1000) ++good;
    if (a[i].k == kind::chat) {
      ttft.push_back(x.ttft_ms);
      tpot.push_back(x.tpot_ms);
      for (size_t j = 1; j < x.token_s.size(); ++j) itl.push_back(1000 * (x.token_s[j] - x.token_s[j - 1]));
    } else if (a[i].k == kind::long_prompt) {
      long_ttft.push_back(x.ttft_ms);
    } else {
      e2e_long_gen.push_back(x.end_s - x.submit_s);
    }
  }
  nlohmann::json j = {{"config", name},
                      {"requests", a.size()},
                      {"completed", ok},
                      {"failed", failed},
                      {"qps", last_end > 0 ? ok / last_end : 0.0},
                      {"goodput_rps", last_end > 0 ? good / last_end : 0.0},
                      {"short_ttft_ms", {{"p50", percentile(ttft, 0.5)}, {"p95", percentile(ttft, 0.95)}, {"p99", percentile(ttft, 0.99)}}},
                      {"short_tpot_ms", {{"p50", percentile(tpot, 0.5)}, {"p95", percentile(tpot, 0.95)}, {"p99", percentile(tpot, 0.99)}}},
                      {"short_itl_ms", {{"p50", percentile(itl, 0.5)}, {"p95", percentile(itl, 0.95)}, {"p99", percentile(itl, 0.99)}}},
                      {"long_prompt_ttft_ms_p50", percentile(long_ttft, 0.5)},
                      {"scheduler_decisions", st.decisions},
                      {"scheduler_decision_us_p99", st.decision_us_p99},
                      {"scheduler_decision_us_max", st.decision_us_max}};
  if (st.physical) {
    const double per = st.kv_transfers ? st.kv_transfer_seconds / st.kv_transfers : 0.0;
    double mean_long = 0;
    for (double s : e2e_long_gen) mean_long += s / static_cast<double>(e2e_long_gen.size());
    j["kv_transfers"] = st.kv_transfers;
    j["kv_transfer_mb"] = st.kv_transfer_bytes / 1e6;
    j["kv_transfer_ratio_vs_f32"] = st.kv_transfer_f32_bytes ? double(st.kv_transfer_bytes) / st.kv_transfer_f32_bytes : 0.0;
    j["kv_transfer_ms_mean"] = 1000 * per;
    j["kv_transfer_share_of_request_time"] = e2e_total > 0 ? st.kv_transfer_seconds / e2e_total : 0.0;
    j["kv_transfer_share_long_generations"] = mean_long > 0 ? per / mean_long : 0.0;
    j["prefill_failovers"] = st.prefill_failovers;
    j["routed_co_located"] = st.routed_co_located;
  }
  if (st.offload_device) {
    j["offloaded"] = st.offloaded;
    j["offload_refused"] = st.offload_refused;
  }
  return j;
}

/// A 10-turn chat: each turn re-sends the conversation so far plus a new user message.
nlohmann::json chat_turns(const runtime_parts& base, const config& cfg, double share) {
  config c = cfg;
  c.kv_cache.prefix_cache_share = share;
  build_options bo;
  bo.preloaded = base.m;
  bo.build_draft = false;
  auto parts = build_runtime(c, bo);
  if (!parts) return {{"error", parts.err().message}};
  auto lim = parts->limits();
  lim.draft = nullptr;
  auto e = actors::engine::start(*parts, lim);
  if (!e) return {{"error", e.err().message}};
  std::mt19937_64 rng(11);
  std::vector<int32_t> conv = random_prompt(rng, 60, parts->m->config().n_vocab);
  nlohmann::json ttft = nlohmann::json::array();
  for (int turn = 0; turn < 10; ++turn) {
    auto r = (*e)->run(conv, params_for(32));
    ttft.push_back(r.final.ttft_ms);
    conv.insert(conv.end(), r.tokens.begin(), r.tokens.end());
    auto more = random_prompt(rng, 40, parts->m->config().n_vocab);
    conv.insert(conv.end(), more.begin(), more.end());
  }
  auto st = (*e)->stats();
  const double miss = st && st->prefix_cache_query_tokens
                          ? 1.0 - double(st->prefix_cache_hit_tokens) / st->prefix_cache_query_tokens
                          : 1.0;
  return {{"prefix_cache_share", share}, {"ttft_ms", ttft}, {"final_prompt_tokens", conv.size()}, {"kv_miss_rate", miss}};
}

}  // namespace

expected<nlohmann::json> run_mixed_bench(const runtime_parts& base, const mixed_bench_options& o) {
  const auto arrivals = schedule(o, base.m->config().n_vocab);
  nlohmann::json configs = nlohmann::json::array();
  for (auto& v : variants(base.cfg, o)) {
    build_options bo;
    bo.preloaded = base.m;
    bo.build_draft = false;
    auto parts = build_runtime(v.cfg, bo);
    if (!parts) return make_error(parts.err().code, v.name + ": " + parts.err().message);
    auto lim = parts->limits();
    lim.draft = nullptr;
    lim.max_batch = std::max<uint32_t>(lim.max_batch, 32);
    std::fprintf(stderr, "bench: %s: %zu requests over %.0f s (%s%s)\n", v.name.c_str(), arrivals.size(), o.duration_s,
                 parts->device()->summary().c_str(),
                 parts->devices.separate() ? (", prefill on " + parts->devices.prefiller()->summary()).c_str() : "");
    auto e = actors::engine::start(*parts, lim);
    if (!e) return e.err();
    auto r = replay(**e, arrivals);
    auto st = (*e)->stats();
    if (!st) return st.err();
    configs.push_back(summarize(v.name, arrivals, r, *st, o));
    (*e)->shutdown();
  }
  nlohmann::json counts = {{"short", 0}, {"long-prompt", 0}, {"long-gen", 0}};
  for (const auto& a : arrivals) counts[kind_name(a.k)] = counts[kind_name(a.k)].get<int>() + 1;
  const double base_p99 = configs[0]["short_tpot_ms"]["p99"].get<double>();
  const double base_itl = configs[0]["short_itl_ms"]["p99"].get<double>();
  nlohmann::json ratios;
  for (size_t i = 1; i < configs.size(); ++i) {
    const std::string n = configs[i]["config"];
    ratios[n + "_short_tpot_p99_vs_co_located"] = base_p99 > 0 ? configs[i]["short_tpot_ms"]["p99"].get<double>() / base_p99 : 0.0;
    ratios[n + "_short_itl_p99_vs_co_located"] = base_itl > 0 ? configs[i]["short_itl_ms"]["p99"].get<double>() / base_itl : 0.0;
  }
  nlohmann::json out = {{"model", base.m->file().path()},
                        {"workload",
                         {{"duration_s", o.duration_s}, {"short_rate", o.short_rate}, {"short_prompt", o.short_prompt},
                          {"short_gen", o.short_gen}, {"long_rate", o.long_rate}, {"long_prompt", o.long_prompt},
                          {"long_gen", o.long_gen}, {"long_generations", o.long_generations},
                          {"long_generation_tokens", o.long_generation_tokens}, {"seed", o.seed}, {"counts", counts},
                          {"slo_ttft_s", o.slo_ttft_s}, {"slo_tpot_s", o.slo_tpot_s}}},
                        {"configs", configs},
                        {"ratios", ratios}};
  if (o.chat) {
    const config logical = variants(base.cfg, o)[1].cfg;
    out["chat"] = {chat_turns(base, logical, 0.0), chat_turns(base, logical, 0.25)};
  }
  return out;
}

void print_mixed_bench(const nlohmann::json& r) {
  const auto& w = r["workload"];
  std::printf("mixed workload: %d short (%.1f/s, ~%d-token prompts, %d tokens), %d long prompts (%d tokens), %d long "
              "generations (%d tokens), over %.0f s; SLO TTFT < %.0f ms and TPOT < %.0f ms\n\n",
              w["counts"]["short"].get<int>(), w["short_rate"].get<double>(), w["short_prompt"].get<int>(),
              w["short_gen"].get<int>(), w["counts"]["long-prompt"].get<int>(), w["long_prompt"].get<int>(),
              w["counts"]["long-gen"].get<int>(), w["long_generation_tokens"].get<int>(), w["duration_s"].get<double>(),
              1000 * w["slo_ttft_s"].get<double>(), 1000 * w["slo_tpot_s"].get<double>());
  std::printf("| config | TTFT p50/p95/p99 ms | TPOT p50/p95/p99 ms | ITL p99 ms | long TTFT p50 ms | QPS | goodput/s | "
              "failed | decision p99 us |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& c : r["configs"]) {
    const auto& t = c["short_ttft_ms"];
    const auto& p = c["short_tpot_ms"];
    std::printf("| %s | %.0f / %.0f / %.0f | %.1f / %.1f / %.1f | %.1f | %.0f | %.2f | %.2f | %d | %.1f |\n",
                c["config"].get<std::string>().c_str(), t["p50"].get<double>(), t["p95"].get<double>(),
                t["p99"].get<double>(), p["p50"].get<double>(), p["p95"].get<double>(), p["p99"].get<double>(),
                c["short_itl_ms"]["p99"].get<double>(), c["long_prompt_ttft_ms_p50"].get<double>(), c["qps"].get<double>(),
                c["goodput_rps"].get<double>(), c["failed"].get<int>(), c["scheduler_decision_us_p99"].get<double>());
  }
  for (const auto& c : r["configs"])
    if (c.contains("kv_transfers"))
      std::printf("\n%s: %d KV transfers, %.1f MB (%.2f of f32), %.1f ms each; transfer share of request time %.2f%% "
                  "(long generations %.2f%%); %d prefill failovers, %d routed co-located\n",
                  c["config"].get<std::string>().c_str(), c["kv_transfers"].get<int>(), c["kv_transfer_mb"].get<double>(),
                  c["kv_transfer_ratio_vs_f32"].get<double>(), c["kv_transfer_ms_mean"].get<double>(),
                  100 * c["kv_transfer_share_of_request_time"].get<double>(),
                  100 * c["kv_transfer_share_long_generations"].get<double>(), c["prefill_failovers"].get<int>(),
                  c["routed_co_located"].get<int>());
  for (const auto& c : r["configs"])
    if (c.contains("offloaded"))
      std::printf("\n%s: %d sequences moved mid-generation, %d moves refused\n", c["config"].get<std::string>().c_str(),
                  c["offloaded"].get<int>(), c["offload_refused"].get<int>());
  std::printf("\nratios (P99 of the short requests, lower is better):");
  for (const auto& [k, v] : r["ratios"].items()) std::printf("  %s %.2f", k.c_str(), v.get<double>());
  std::printf("\n");
  if (r.contains("chat"))
    for (const auto& c : r["chat"]) {
      if (c.contains("error")) continue;
      std::printf("10-turn chat, prefix cache share %.2f: TTFT turn 1 %.1f ms, turn 10 %.1f ms (prompt %d tokens), KV miss "
                  "rate %.1f%%\n",
                  c["prefix_cache_share"].get<double>(), c["ttft_ms"][0].get<double>(), c["ttft_ms"][9].get<double>(),
                  c["final_prompt_tokens"].get<int>(), 100 * c["kv_miss_rate"].get<double>());
    }
}

}  // namespace fw::cli
