#include "tools/bench/bench_server.hpp"

#include <random>

#include "tools/bench/trace_replay.hpp"

namespace fw::cli {

expected<nlohmann::json> run_server_bench(const server_bench_options& o) {
  if (!(o.rate > 0) || !(o.duration_s > 0))
    return make_error(errc::invalid_argument, "--rate and --duration must be above 0");
  std::vector<traced_request> trace;
  std::mt19937_64 rng(o.seed);
  std::exponential_distribution<double> gap(o.rate);
  for (double t = gap(rng); t < o.duration_s; t += gap(rng)) {
    const size_t i = trace.size();
    const std::string prompt =
        o.prompt.empty() ? "Request " + std::to_string(i) + ": write a few sentences about the number " +
                               std::to_string((i * 7919) % 1000) + "."
                         : o.prompt;
    trace.push_back({t, "all", nlohmann::json::array({{{"role", "user"}, {"content", prompt}}}), o.max_tokens});
  }
  replay_options ro;
  ro.url = o.url;
  ro.model = o.model;
  ro.api_key = o.api_key;
  ro.temperature = 0.8;
  ro.concurrency = o.concurrency;
  ro.label = "bench --server";
  ro.progress = o.progress;
  auto r = replay_trace(ro, trace);
  if (!r) return r.err();
  auto all = summarize(*r, slo{})["all"];
  return nlohmann::json{{"server", o.url},
                        {"model", r->model},
                        {"rate", o.rate},
                        {"duration_s", o.duration_s},
                        {"concurrency_cap", o.concurrency},
                        {"max_tokens", o.max_tokens},
                        {"requests", all["requests"]},
                        {"completed", all["completed"]},
                        {"errors", all["errors"]},
                        {"wall_s", r->wall_s},
                        {"qps", all["qps"]},
                        {"output_tok_s", all["output_tok_s"]},
                        {"ttft_ms", all["ttft_ms"]},
                        {"tpot_ms", all["tpot_ms"]},
                        {"itl_ms", all["itl_ms"]},
                        {"e2e_ms", all["e2e_ms"]},
                        {"client_wait_ms", all["client_wait_ms"]}};
}

}  // namespace fw::cli
