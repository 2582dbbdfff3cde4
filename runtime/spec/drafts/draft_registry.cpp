#include "runtime/spec/drafts/draft_registry.hpp"

#include <algorithm>

#include "kernels/format/ggml_type.hpp"
#include "runtime/spec/drafts/feature_drafter.hpp"
#include "runtime/spec/drafts/hybrid_drafter.hpp"
#include "runtime/spec/drafts/model_drafter.hpp"
#include "runtime/spec/drafts/ngram_drafter.hpp"

namespace fw {
namespace {

using draft_ptr = std::unique_ptr<drafter>;

expected<draft_ptr> make_ngram(const draft_context& c) {
  return draft_ptr(std::make_unique<ngram_drafter>(static_cast<int>(c.spec->ngram_min)));
}

expected<std::unique_ptr<feature_drafter>> make_feature_draft(const draft_context& c) {
  auto map = load_feature_map(c.spec->feature_map);
  if (!map) {
    const bool missing = map.err().code == errc::io_error;  // not there yet: say how to make it
    return make_error(map.err().code, map.err().message +
                      (missing ? " (make it with `flywheel fit-draft --out " + c.spec->feature_map + "`)" : ""));
  }
  return feature_drafter::create(*map, c.target, c.threads);
}

expected<draft_ptr> make_feature(const draft_context& c) {
  auto d = make_feature_draft(c);
  if (!d) return d.err();
  return draft_ptr(std::move(*d));
}

expected<draft_ptr> make_hybrid(const draft_context& c) {
  auto d = make_feature_draft(c);
  if (!d) return d.err();
  return draft_ptr(std::make_unique<hybrid_drafter>(std::make_unique<ngram_drafter>(static_cast<int>(c.spec->ngram_min)),
                                                    std::move(*d)));
}

expected<draft_ptr> make_layer_skip(const draft_context& c) {
  const uint32_t n = c.target->config().n_layer;
  const uint32_t layers = c.spec->draft_layers > 0 ? c.spec->draft_layers : std::max(1u, n / 2);
  if (layers >= n)
    return make_error(errc::invalid_argument, "speculative.draft_layers = " + std::to_string(layers) +
                      " must be below the target's " + std::to_string(n) + " layers");
  auto d = model_drafter::create_layer_skip(c.target, *c.target_backend, layers, static_cast<float>(c.spec->draft_stop_p));
  if (!d) return d.err();
  return draft_ptr(std::move(*d));
}

/// A draft model from a file (a separate model, or the target re-quantized at load).
expected<draft_ptr> make_model_draft(const draft_context& c, const std::string& path, const weight_load_options& o) {
  auto m = model::load(path, o);
  if (!m) return m.err();
  if (!c.make_backend) return make_error(errc::unsupported, "no backend factory for a draft model");
  auto be = c.make_backend(**m, c.kv_tokens);
  if (!be) return be.err();
  auto d = model_drafter::create(c.spec->draft_name(), *m, *c.target, std::move(*be), static_cast<float>(c.spec->draft_stop_p));
  if (!d) return d.err();
  return draft_ptr(std::move(*d));
}

expected<draft_ptr> make_self_quant(const draft_context& c) {
  weight_load_options o;
  o.convert_to = type_by_name(enum_name(draft_quant_type_names, c.spec->draft_quant));
  if (!o.convert_to) return make_error(errc::internal, "speculative.draft_quant names no known format");
  return make_model_draft(c, c.target->file().path(), o);
}

expected<draft_ptr> make_separate_model(const draft_context& c) {
  if (c.spec->draft_model.empty())
    return make_error(errc::invalid_argument, "speculative.draft = \"model\" needs draft_model");
  return make_model_draft(c, c.spec->draft_model, {});
}

}  // namespace

expected<std::unique_ptr<drafter>> draft_registry::make(const draft_context& ctx) const {
  if (ctx.spec->draft == draft_kind::none) return std::unique_ptr<drafter>();
  const std::string name = ctx.spec->draft_name();
  const auto it = factories_.find(ctx.spec->draft);
  if (it == factories_.end()) return make_error(errc::unsupported, "draft " + name + ": not available in this context");
  auto d = it->second(ctx);
  if (!d) return make_error(d.err().code, "draft " + name + ": " + d.err().message);
  return d;
}

void register_builtin_drafts(draft_registry& r) {
  r.add(draft_kind::ngram, make_ngram);
  r.add(draft_kind::feature, make_feature);
  r.add(draft_kind::hybrid, make_hybrid);
  r.add(draft_kind::layer_skip, make_layer_skip);
  r.add(draft_kind::self_quant, make_self_quant);
  r.add(draft_kind::model, make_separate_model);
}

}  // namespace fw
