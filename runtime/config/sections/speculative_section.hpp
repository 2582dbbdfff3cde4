// speculative_section: [speculative], speculative decoding: which draft proposes tokens and how
// many per step. Read by runtime/setup (the draft registry of runtime/spec/drafts builds the
// draft, the k policy comes from k). Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/config/sections/enum_names.hpp"

namespace fw {

/// The draft kinds a config may name; each has one factory in runtime/spec/drafts' registry
/// (a test checks that every kind here has one).
enum class draft_kind { none, model, self_quant, layer_skip, ngram, feature, hybrid, plugin };
inline constexpr enum_table<draft_kind, 8> draft_kind_names = {{
    {draft_kind::none, "none"}, {draft_kind::model, "model"}, {draft_kind::self_quant, "self-quant"},
    {draft_kind::layer_skip, "layer-skip"}, {draft_kind::ngram, "ngram"}, {draft_kind::feature, "feature"},
    {draft_kind::hybrid, "hybrid"}, {draft_kind::plugin, "plugin"}}};

/// Weight formats a self-quant draft may use (named as GGUF names them).
enum class draft_quant_type { q4_0, q4_1, q8_0 };
inline constexpr enum_table<draft_quant_type, 3> draft_quant_type_names = {{
    {draft_quant_type::q4_0, "q4_0"}, {draft_quant_type::q4_1, "q4_1"}, {draft_quant_type::q8_0, "q8_0"}}};

struct speculative_section {
  draft_kind draft = draft_kind::none;
  std::string draft_plugin;    ///< draft = "plugin:NAME": the [[plugins.load]] name
  std::string draft_model;     ///< GGUF draft for draft = "model"
  std::string feature_map = "models/feature_draft.gguf";  ///< draft = "feature"/"hybrid": the map `flywheel fit-draft` wrote
  /// The prompts the feature map is fitted on when feature_map does not exist yet (first use).
  std::string feature_prompts = "conf/calibration/prompts.txt";
  std::optional<uint32_t> k = 5;  ///< draft tokens per step 1..16; nullopt: "auto" (adaptive policy)
  uint32_t draft_layers = 0;   ///< layer-skip: target layers the draft runs; 0: half of them
  draft_quant_type draft_quant = draft_quant_type::q4_0;  ///< self-quant: weight format of the draft copy
  uint32_t ngram_min = 1;      ///< ngram: shortest agreeing context that proposes (1 = any earlier occurrence of the last token)
  double draft_stop_p = 0.0;   ///< the draft stops when its token probability falls below; 0: never
  /// The draft actor's own kernel threads; 0: it shares the target's (drafting and verifying take
  /// turns). With its own threads a separate draft model drafts the next step while the target
  /// verifies this one.
  uint32_t draft_threads = 0;

  /// The draft as written in a config: "ngram", "plugin:NAME".
  [[nodiscard]] std::string draft_name() const {
    return draft == draft_kind::plugin ? "plugin:" + draft_plugin : std::string(enum_name(draft_kind_names, draft));
  }
  bool operator==(const speculative_section&) const = default;
};

}  // namespace fw
