#include "runtime/setup/lever_summary.hpp"

#include "kernels/format/ggml_type.hpp"

namespace fw {

std::string lever_summary(const runtime_parts& parts) {
  const config& cfg = parts.cfg;
  std::string weights;
  bool quantized = false;
  for (ggml_type t : parts.m->weights().matrix_types()) {
    weights += (weights.empty() ? "" : ", ") + std::string(ggml_type_name(static_cast<uint32_t>(t)));
    quantized |= t != ggml_type::f32 && t != ggml_type::f16 && t != ggml_type::bf16;
  }
  std::string s = "levers: " + std::string(quantized ? "quantized weights (" : "16-bit weights (") + weights + "); ";
  if (cfg.speculative.draft == draft_kind::none) {
    s += "no speculation; ";
  } else {
    s += "speculation: " + cfg.speculative.draft_name() + ", k " +
         (cfg.speculative.k ? std::to_string(*cfg.speculative.k) : std::string("auto")) + "; ";
  }
  bool prefill = false, offload = false;
  for (const auto& d : cfg.devices) {
    prefill |= d.role == device_role::prefill;
    offload |= d.role == device_role::offload;
  }
  s += "prefill/decode: ";
  if (cfg.node.role == node_role::decode) s += "prefill nodes " + std::to_string(cfg.node.peers.size());
  else if (prefill) s += "physical (a prefill and a decode device)";
  else if (cfg.scheduler.decode_priority)
    s += std::string("logical (decode first, ") +
         (cfg.scheduler.prefill_order == prefill_order_type::shortest ? "shortest prompt first" : "prompts in arrival order") +
         ")";
  else s += "co-located (first come, first served)";
  if (offload) s += " + CPU offload of long tails";
  if (cfg.kv_cache.prefix_cache_share > 0) s += "; prefix cache";
  return s;
}

}  // namespace fw
