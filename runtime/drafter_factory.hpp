// make_drafter: builds the draft named by a [speculative] config section for a target model:
//   none        -> nullptr (plain decoding)
//   ngram       -> prompt lookup (ngram_min)
//   feature     -> a linear next-state map fit on the target (feature_map, `flywheel fit-draft`)
//   hybrid      -> ngram where the context repeats, feature elsewhere
//   layer-skip  -> the target's first draft_layers layers plus its head (0: half the layers)
//   self-quant  -> the target's weights re-quantized to draft_quant at load
//   model       -> a separate GGUF (draft_model), vocabulary checked
//   plugin:NAME -> a draft_model plugin the plugin host has loaded (hot-reloadable)
// Model drafts share the target's kernel threads; layer-skip runs on target_backend itself (over
// the target's KV), so use it only with decoders of that backend. Plugin drafts come through the plugin host.
#pragma once

#include <memory>

#include "runtime/config.hpp"
#include "runtime/cpu_backend.hpp"
#include "runtime/drafter.hpp"
#include "runtime/k_policy.hpp"
#include "runtime/model.hpp"

namespace fw {

class plugin_host;

/// `plugins` resolves "plugin:NAME" drafts (a draft_model plugin loaded by the host); may be null.
expected<std::unique_ptr<drafter>> make_drafter(const speculative_section& spec, std::shared_ptr<const model> target,
                                                cpu_backend& target_backend, uint32_t kv_tokens,
                                                plugin_host* plugins = nullptr);

/// The k policy a [speculative] section asks for, capped by the decode device's bandwidth; with
/// k = auto and a measured verify_cost (calibrate_verify_cost) it picks k by cost.
k_policy make_k_policy(const speculative_section& spec, double bandwidth_gbs, std::vector<double> verify_cost = {});

/// The k policy a whole config asks for, as the serving tools use it: capped by the bandwidth of
/// its decode devices, and with k = auto and a draft (`drafting`), cost-aware by a verify-cost
/// calibration on `target` (calibrate_verify_cost; ~0.2 s).
k_policy make_k_policy(const config& cfg, bool drafting, backend& target);

}  // namespace fw
