#include "tools/flywheel/bench_spec_engine.hpp"

#include <algorithm>
#include <sstream>

#include "actors/engine.hpp"
#include "runtime/metrics/metric_series.hpp"

namespace fw::cli {
namespace {

/// The sum of a series' samples in a Prometheus text page (0 when absent).
double metric(const std::string& page, const std::string& name) {
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
  auto spec_be = session.make_backend(kv_tokens);
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
  for (const auto& prompt : prompts) {
    double best_plain = 1e300, best_spec = 1e300;
    for (int64_t rep = 0; rep < reps; ++rep) {
      auto p = (*plain)->run(prompt, params);
      auto s = (*spec_engine)->run(prompt, params);
      if (!p.ok()) return make_error(errc::internal, "plain decoding through the engine: " + p.final.error);
      if (!s.ok()) return make_error(errc::internal, "speculative decoding through the engine: " + s.final.error);
      best_plain = std::min(best_plain, p.final.total_ms - p.final.ttft_ms);
      best_spec = std::min(best_spec, s.final.total_ms - s.final.ttft_ms);
      r.identical = r.identical && p.tokens == s.tokens;
      if (rep + 1 == reps) r.tokens += s.tokens.size();
    }
    r.plain_ms += best_plain;
    r.spec_ms += best_spec;
  }
  const std::string page = (*spec_engine)->render_metrics();
  r.drafted = metric(page, std::string(series::spec_decode_num_draft_tokens.name));
  r.accepted = metric(page, std::string(series::spec_decode_num_accepted_tokens.name));
  r.steps = metric(page, std::string(series::spec_decode_num_drafts.name));
  r.draft_s = metric(page, std::string(series::spec_decode_draft_seconds.name));
  r.ahead_s = metric(page, std::string(series::spec_decode_draft_ahead_seconds.name));
  r.hidden_s = metric(page, std::string(series::spec_decode_draft_hidden_seconds.name));
  r.ahead_hits = metric(page, std::string(series::spec_decode_draft_ahead_hits.name));
  (*spec_engine)->shutdown();
  (*plain)->shutdown();
  return r;
}

}  // namespace fw::cli
