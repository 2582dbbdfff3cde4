#include "runtime/drafter_factory.hpp"

#include "runtime/verify_cost.hpp"

#include "runtime/model_drafter.hpp"
#include "runtime/plugin_draft.hpp"
#include "runtime/plugin_host.hpp"
#include "runtime/feature_drafter.hpp"
#include "runtime/hybrid_drafter.hpp"
#include "runtime/ngram_drafter.hpp"

namespace fw {
namespace {

// A plugin draft is shared with the host's registry (which counts its users); the engine holds
// it through this owner.
class shared_drafter final : public drafter {
 public:
  explicit shared_drafter(std::shared_ptr<drafter> d) : d_(std::move(d)) {}
  std::string name() const override { return d_->name(); }
  expected<void> begin(uint64_t seq, std::span<const int32_t> prompt, const sampling_params& p) override {
    return d_->begin(seq, prompt, p);
  }
  expected<draft_proposal> propose(uint64_t seq, std::span<const int32_t> history, int k) override {
    return d_->propose(seq, history, k);
  }
  void accept(uint64_t seq, std::span<const int32_t> history) override { d_->accept(seq, history); }
  void end(uint64_t seq) override { d_->end(seq); }

 private:
  std::shared_ptr<drafter> d_;
};

}  // namespace

expected<std::unique_ptr<drafter>> make_drafter(const speculative_section& spec, std::shared_ptr<const model> target,
                                                cpu_backend& target_backend, uint32_t kv_tokens,
                                                plugin_host* plugins) {
  if (spec.draft == "none") return std::unique_ptr<drafter>();
  if (spec.draft.rfind("plugin:", 0) == 0) {
    const std::string name = spec.draft.substr(7);
    if (!plugins) return make_error(errc::unsupported, "draft " + spec.draft + ": no plugin host in this context");
    draft_options o;
    o.n_vocab = static_cast<int32_t>(target->config().n_vocab);
    auto d = plugins->create_draft(name, o);
    if (!d) return make_error(d.err().code, "draft " + spec.draft + ": " + d.err().message);
    return std::unique_ptr<drafter>(std::make_unique<shared_drafter>(std::move(*d)));
  }
  if (spec.draft == "ngram") return std::unique_ptr<drafter>(std::make_unique<ngram_drafter>(static_cast<int>(spec.ngram_min)));
  if (spec.draft == "feature" || spec.draft == "hybrid") {
    auto map = load_feature_map(spec.feature_map);
    if (!map) {
      const bool missing = map.err().code == errc::io_error;  // not there yet: say how to make it
      return make_error(map.err().code, "draft " + spec.draft + ": " + map.err().message +
                        (missing ? " (make it with `flywheel fit-draft --out " + spec.feature_map + "`)" : ""));
    }
    auto d = feature_drafter::create(*map, target, target_backend.thread_pool());
    if (!d) return make_error(d.err().code, "draft " + spec.draft + ": " + d.err().message);
    if (spec.draft == "feature") return std::unique_ptr<drafter>(std::move(*d));
    return std::unique_ptr<drafter>(std::make_unique<hybrid_drafter>(
        std::make_unique<ngram_drafter>(static_cast<int>(spec.ngram_min)), std::move(*d)));
  }
  weight_load_options o;
  std::string path = target->file().path();
  if (spec.draft == "layer-skip") {
    const uint32_t n = target->config().n_layer;
    const uint32_t layers = spec.draft_layers > 0 ? spec.draft_layers : std::max(1u, n / 2);
    if (layers >= n)
      return make_error(errc::invalid_argument, "speculative.draft_layers = " + std::to_string(layers) +
                        " must be below the target's " + std::to_string(n) + " layers");
    auto d = model_drafter::create_layer_skip(target, target_backend, layers, static_cast<float>(spec.draft_stop_p));
    if (!d) return d.err();
    return std::unique_ptr<drafter>(std::move(*d));
  }
  if (spec.draft == "self-quant") {
    if (spec.draft_quant == "q4_0") o.convert_to = ggml_type::q4_0;
    else if (spec.draft_quant == "q4_1") o.convert_to = ggml_type::q4_1;
    else if (spec.draft_quant == "q8_0") o.convert_to = ggml_type::q8_0;
    else return make_error(errc::invalid_argument, "speculative.draft_quant '" + spec.draft_quant + "' is not one of q4_0, q4_1, q8_0");
  } else if (spec.draft == "model") {
    if (spec.draft_model.empty()) return make_error(errc::invalid_argument, "speculative.draft = \"model\" needs draft_model");
    path = spec.draft_model;
  } else {
    return make_error(errc::invalid_argument, "unknown draft '" + spec.draft + "'; allowed: none, ngram, feature, hybrid, layer-skip, self-quant, model");
  }
  auto m = model::load(path, o);
  if (!m) return make_error(m.err().code, "draft " + spec.draft + ": " + m.err().message);
  cpu_backend_options bo;
  bo.kv_tokens = kv_tokens;
  bo.shared_threads = target_backend.thread_pool();
  auto d = model_drafter::create(spec.draft, *m, *target, bo, static_cast<float>(spec.draft_stop_p));
  if (!d) return d.err();
  return std::unique_ptr<drafter>(std::move(*d));
}

k_policy make_k_policy(const speculative_section& spec, double bandwidth_gbs, std::vector<double> verify_cost) {
  k_policy_config c;
  c.verify_cost = std::move(verify_cost);
  if (auto k = spec.fixed_k()) {
    c.adaptive = false;
    c.fixed_k = static_cast<int>(*k);
    c.k_max = std::max(c.k_max, c.fixed_k);
  }
  c.bandwidth_gbs = bandwidth_gbs;
  return k_policy(c);
}

k_policy make_k_policy(const config& cfg, bool drafting, backend& target) {
  double bandwidth = 0;
  for (const auto& dev : cfg.devices)
    if (dev.role == "decode" || dev.role == "both") bandwidth = std::max(bandwidth, dev.bandwidth_gbs);
  std::vector<double> cost;
  if (drafting && !cfg.speculative.fixed_k()) {  // k = auto: measure what verifying extra rows costs here
    if (auto c = calibrate_verify_cost(target)) cost = std::move(*c);
  }
  return make_k_policy(cfg.speculative, bandwidth, std::move(cost));
}

}  // namespace fw
