#include "runtime/model/arch/llama_layers.hpp"

#include <algorithm>

namespace fw {

void run_llama_layers(llama_ops& ops, uint32_t total_layers, uint32_t n_layers) {
  const uint32_t n = n_layers > 0 ? std::min(n_layers, total_layers) : total_layers;
  ops.embed_tokens();
  for (uint32_t il = 0; il < n; ++il) {
    ops.rms_norm(il, llama_norm::attention);
    ops.project_qkv(il);
    ops.rope_and_store_kv(il);
    ops.attention(il, il + 1 == n);
    ops.project_out_add(il);
    ops.rms_norm(il, llama_norm::ffn);
    ops.ffn_gate_up(il);
    ops.ffn_down_add(il);
  }
  ops.output_head();
}

}  // namespace fw
