#include "tools/flywheel/quality_runner.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "runtime/model/user_prompt.hpp"
#include "runtime/quant/calibration_set.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "runtime/text/chat_encoding.hpp"

namespace fw::cli {

expected<std::string> read_eval_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error(errc::io_error, "evaluation text " + path + " cannot be opened");
  std::string line, text;
  while (std::getline(f, line)) {
    if (!line.empty() && line[0] == '#') continue;
    text += line + "\n";
  }
  if (text.find('\0') != std::string::npos) return make_error(errc::invalid_argument, "evaluation text " + path + " is binary");
  if (text.size() < 64) return make_error(errc::invalid_argument, "evaluation text " + path + " is too short to measure anything");
  return text;
}

expected<quality_report> run_quality(const config& base, const quality_run& run) {
  auto text = read_eval_text(run.text_path);
  if (!text) return text.err();
  layer_capture cap_m, cap_r;
  auto build = [&](const std::string& path, layer_capture& cap) -> expected<runtime_parts> {
    config cfg = base;
    cfg.model.path = path;
    build_options bo;
    bo.build_draft = false;
    bo.observer = &cap;
    bo.kv_tokens = std::max<uint32_t>(2048, 2 * run.options.ctx);
    if (cfg.model.ctx_size == 0 || cfg.model.ctx_size > bo.kv_tokens) cfg.model.ctx_size = bo.kv_tokens;
    return build_runtime(std::move(cfg), bo);
  };
  auto m = build(run.model_path, cap_m);
  if (!m) return m.err();
  auto r = build(run.ref_path, cap_r);
  if (!r) return r.err();
  const auto& mc = m->m->config();
  const auto& rc = r->m->config();
  if (mc.n_vocab != rc.n_vocab || mc.n_layer != rc.n_layer || mc.n_embd != rc.n_embd)
    return make_error(errc::invalid_argument, run.model_path + " and " + run.ref_path +
                                                  " are not the same model (vocabulary, layers or width differ)");
  const auto& vocab = r->m->vocab();
  const auto tokens = vocab.encode(*text, false, false);
  std::vector<std::vector<int32_t>> queries;
  if (!run.queries_path.empty()) {
    calibration_options co;
    co.max_queries = run.max_queries;
    co.min_queries = 1;
    auto qs = read_calibration_file(run.queries_path, co);
    if (!qs) return qs.err();
    for (const auto& q : *qs)
      queries.push_back(user_prompt(*r->m, q));
  }
  const int32_t bos = vocab.add_bos() ? vocab.bos() : -1;
  return evaluate_quality(*m->device(), cap_m, *r->device(), cap_r, mc.n_layer, mc.n_vocab, bos, tokens, queries, run.options);
}

void print_quality(const quality_report& r, const quality_run& run) {
  std::printf("quality of %s against %s\n", run.model_path.c_str(), run.ref_path.c_str());
  std::printf("  held-out text %s: %llu predictions in chunks of %u tokens\n", run.text_path.c_str(),
              static_cast<unsigned long long>(r.tokens), run.options.ctx);
  std::printf("  perplexity      %10.4f   reference %.4f   (%+.2f%%)\n", r.ppl, r.ppl_ref, 100 * r.ppl_delta());
  std::printf("  KL(ref || model) mean %.5f   max %.4f nats (at position %u of its chunk)\n", r.kl_mean, r.kl_max,
              r.kl_max_position);
  std::printf("  top-1 agreement %9.2f%%\n", 100 * r.top1);
  if (r.queries)
    std::printf("  greedy agreement on %u queries (%u tokens): %.1f%% of tokens before the first divergence, %.0f%% identical\n",
                r.queries, run.options.gen_tokens, 100 * r.greedy_agreement, 100 * r.greedy_exact);
  std::printf("  per-layer relative error of the residual stream (||x - x_ref||^2 / ||x_ref||^2):\n");
  for (size_t l = 0; l < r.layer_error.size(); ++l)
    std::printf("    layer %2zu  %.2e%s", l, r.layer_error[l], (l % 4 == 3 || l + 1 == r.layer_error.size()) ? "\n" : "");
}

nlohmann::json quality_json(const quality_report& r, const quality_run& run) {
  return {{"model", run.model_path},
          {"reference", run.ref_path},
          {"text", run.text_path},
          {"ctx", run.options.ctx},
          {"predictions", r.tokens},
          {"perplexity", r.ppl},
          {"perplexity_ref", r.ppl_ref},
          {"perplexity_delta", r.ppl_delta()},
          {"kl_mean", r.kl_mean},
          {"kl_max", r.kl_max},
          {"kl_max_position", r.kl_max_position},
          {"top1_agreement", r.top1},
          {"greedy_queries", r.queries},
          {"greedy_agreement", r.greedy_agreement},
          {"greedy_identical", r.greedy_exact},
          {"layer_error", r.layer_error}};
}

}  // namespace fw::cli
