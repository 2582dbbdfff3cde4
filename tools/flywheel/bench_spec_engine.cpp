#include "tools/flywheel/bench_spec_engine.hpp"

#include <algorithm>
#include <sstream>
#include <string_view>

#include "actors/engine.hpp"
#include "runtime/metrics/metric_series.hpp"

namespace fw::cli {
namespace {

/// The sum of a series' samples in a Prometheus text page (0 when absent).
double metric(const std::string& page, std::string_view name) {
  std::istringstream in(page);
  double sum = 0;
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name, 0) == 0 && line.size() > name.size() && (line[name.size()] == ' ' || line[name.size()] == '{'))
      sum += std::stod(line.substr(line.rfind(' ') + 1));
  return sum;
}

}  // namespace

expected<engine_set_result> bench_spec_engine_set(const runtime_parts& session, const config& spec,
                                                  const std::vector<std::vector<int32_t>>& prompts,
                                                  const sampling_params& params, int64_t reps,
                                                  const std::vector<double>& verify_cost) {
  const uint32_t kv_tokens = 2 * session.n_ctx;
  auto plain_be = session.make_backend(kv_tokens);
  if (!plain_be) return plain_be.err();
  // Equal total cores: a draft with threads of its own takes them from the target's.
  const int total = session.threads() ? session.threads()->size() : 0;
  const int own = static_cast<int>(spec.speculative.draft_threads);
  auto spec_be = session.make_backend(kv_tokens, own > 0 && total > own ? total - own : 0);
  if (!spec_be) return spec_be.err();
  // The draft over the speculative engine's own backend (layer-skip reads that target's KV).
  auto draft = session.make_draft(spec.speculative, spec_be->get());
  if (!draft) return draft.err();
  engine_limits lim = session.limits();
  lim.draft = nullptr;
  auto plain = actors::engine::start(session.m, std::move(*plain_be), lim);
  if (!plain) return plain.err();
  lim.draft = draft->get();
  lim.draft_runs_ahead = spec.speculative.draft_threads > 0;
  lim.policy = make_k_policy(spec.speculative, 0, verify_cost);
  auto spec_engine = actors::engine::start(session.m, std::move(*spec_be), lim);
  if (!spec_engine) return spec_engine.err();
  engine_set_result r;
  r.target_threads = own > 0 && total > own ? total - own : total;
  // The speculative engine's counters, read around each prompt's last rep (as bench-spec's
  // in-process mode counts the last rep).
  struct counters {
    double drafted = 0, accepted = 0, steps = 0, draft_s = 0, ahead_s = 0, hidden_s = 0, hits = 0;
  };
  auto read = [&] {
    const std::string page = (*spec_engine)->render_metrics();
    counters c;
    c.drafted = metric(page, series::spec_decode_num_draft_tokens.name);
    c.accepted = metric(page, series::spec_decode_num_accepted_tokens.name);
    c.steps = metric(page, series::spec_decode_num_drafts.name);
    c.draft_s = metric(page, series::spec_decode_draft_seconds.name);
    c.ahead_s = metric(page, series::spec_decode_draft_ahead_seconds.name);
    c.hidden_s = metric(page, series::spec_decode_draft_hidden_seconds.name);
    c.hits = metric(page, series::spec_decode_draft_ahead_hits.name);
    return c;
  };
  for (const auto& prompt : prompts) {
    double best_plain = 1e300, best_spec = 1e300;
    for (int64_t rep = 0; rep < reps; ++rep) {
      const bool last = rep + 1 == reps;
      auto p = (*plain)->run(prompt, params);
      const counters before = last ? read() : counters{};
      auto s = (*spec_engine)->run(prompt, params);
      if (!p.ok()) return make_error(errc::internal, "plain decoding through the engine: " + p.final.error);
      if (!s.ok()) return make_error(errc::internal, "speculative decoding through the engine: " + s.final.error);
      best_plain = std::min(best_plain, p.final.total_ms - p.final.ttft_ms);
      best_spec = std::min(best_spec, s.final.total_ms - s.final.ttft_ms);
      r.identical = r.identical && p.tokens == s.tokens;
      if (!last) continue;
      const counters after = read();
      r.tokens += s.tokens.size();
      r.drafted += after.drafted - before.drafted;
      r.accepted += after.accepted - before.accepted;
      r.steps += after.steps - before.steps;
      r.draft_s += after.draft_s - before.draft_s;
      r.ahead_s += after.ahead_s - before.ahead_s;
      r.hidden_s += after.hidden_s - before.hidden_s;
      r.ahead_hits += after.hits - before.hits;
    }
    r.plain_ms += best_plain;
    r.spec_ms += best_spec;
  }
  (*spec_engine)->shutdown();
  (*plain)->shutdown();
  return r;
}

}  // namespace fw::cli
