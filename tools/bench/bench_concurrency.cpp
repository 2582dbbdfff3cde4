#include "tools/bench/bench_concurrency.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <mutex>

#include "actors/engine.hpp"
#include "tools/bench/percentile.hpp"

namespace fw::cli {

expected<nlohmann::json> run_concurrency_bench(runtime_parts& s, const concurrency_bench_options& o) {
  nlohmann::json out = nlohmann::json::array();
  const auto& cfg = s.m->config();
  for (int level : o.levels) {
    if (level < 1) return make_error(errc::invalid_argument, "--concurrency levels must be positive");
    // The composition root's backend (with the configured kernel plugins), its pool sized for
    // this level.
    auto be = s.make_backend(static_cast<uint32_t>(level * (o.prompt_tokens + o.gen_tokens + 32)));
    if (!be) return be.err();
    engine_limits lim = s.limits();
    lim.max_batch = static_cast<uint32_t>(std::max(level, 1));
    lim.max_queue = std::max<uint32_t>(lim.max_queue, static_cast<uint32_t>(level));
    if (!o.speculative) lim.draft = nullptr;
    auto e = actors::engine::start(s.m, std::move(*be), lim);
    if (!e) return e.err();
    sampling_params p;
    p.temperature = 0;
    p.max_tokens = o.gen_tokens;
    p.ignore_eos = true;
    std::vector<std::promise<actors::stream_event>> done(level);
    // When each request streamed its first token and ended, and every token's arrival: the
    // decode phase of a level is the window in which all its requests were decoding together
    // (after the last first token, before the first end), free of prompt processing.
    std::mutex times_mutex;
    std::vector<double> first_token(level, -1), finished(level, -1);
    std::vector<double> token_times;
    const auto t0 = std::chrono::steady_clock::now();
    auto since = [t0] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    for (int r = 0; r < level; ++r) {
      std::vector<int32_t> prompt(o.prompt_tokens);
      for (int i = 0; i < o.prompt_tokens; ++i) prompt[i] = static_cast<int32_t>(100 + (r * 7919 + i * 104729) % (cfg.n_vocab - 200));
      (*e)->submit(std::move(prompt), p, [&, r](const actors::stream_event& ev) {
        const double t = since();
        {
          std::lock_guard lock(times_mutex);
          if (ev.kind == static_cast<uint8_t>(actors::stream_kind::token)) {
            if (first_token[r] < 0) first_token[r] = t;
            token_times.insert(token_times.end(), ev.tokens.size(), t);
          } else {
            finished[r] = t;
          }
        }
        if (ev.kind != static_cast<uint8_t>(actors::stream_kind::token)) done[r].set_value(ev);
      });
    }
    std::vector<double> ttft, tpot;
    uint64_t tokens = 0;
    int failed = 0;
    for (auto& d : done) {
      auto ev = d.get_future().get();
      if (ev.kind != static_cast<uint8_t>(actors::stream_kind::done)) {
        ++failed;
        continue;
      }
      ttft.push_back(ev.ttft_ms);
      tpot.push_back(ev.tpot_ms);
      tokens += ev.completion_tokens;
    }
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    (*e)->shutdown();
    const double all_decoding = *std::max_element(first_token.begin(), first_token.end());
    const double first_end = *std::min_element(finished.begin(), finished.end());
    const auto window_tokens = std::count_if(token_times.begin(), token_times.end(),
                                             [&](double t) { return t > all_decoding && t <= first_end; });
    const double decode_tok_s = first_end > all_decoding ? window_tokens / (first_end - all_decoding) : 0.0;
    out.push_back({{"concurrency", level},
                   {"aggregate_tok_s", tokens / wall_s},
                   {"decode_tok_s", decode_tok_s},
                   {"ttft_ms_p50", percentile(ttft, 0.5)},
                   {"ttft_ms_p99", percentile(ttft, 0.99)},
                   {"tpot_ms_p50", percentile(tpot, 0.5)},
                   {"tpot_ms_p99", percentile(tpot, 0.99)},
                   {"prompt_tokens", o.prompt_tokens},
                   {"gen_tokens", o.gen_tokens},
                   {"failed", failed},
                   {"wall_s", wall_s}});
  }
  return out;
}

}  // namespace fw::cli
