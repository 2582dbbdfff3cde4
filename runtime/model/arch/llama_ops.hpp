// llama_ops: the device operations one forward pass of a Llama-architecture model is made of, in
// the granularity a backend implements them (fused where a device fuses: q|k|v is one
// projection, gate|up another). A backend implements this interface for one batch at a time;
// run_llama_layers (llama_layers.hpp) calls the operations in the architecture's order, so every
// backend (CPU now, CUDA next) shares one layer sequence and only the operations differ.
// Weights are named by layer and role, never by pointer: each device maps them to its own
// (packed, uploaded) copies.
// Activations are the backend's: a residual stream x, its normed copy, q|k|v, the attention
// output and gate|up, one row per batch row.
// Thread-safety: one forward at a time (the backend serializes).
#pragma once

#include <cstdint>

namespace fw {

/// Which RMSNorm weight of a layer.
enum class llama_norm : uint8_t { attention, ffn };

class llama_ops {
 public:
  virtual ~llama_ops() = default;

  /// x = the embedding row of each row's token.
  virtual void embed_tokens() = 0;
  /// normed = rms_norm(x) * the layer's norm weight.
  virtual void rms_norm(uint32_t layer, llama_norm which) = 0;
  /// q | k | v = normed . [wq | wk | wv]^T.
  virtual void project_qkv(uint32_t layer) = 0;
  /// Rotates q and k by each row's position and stores k and v in the row's sequence's KV cache.
  virtual void rope_and_store_kv(uint32_t layer) = 0;
  /// Each row's queries attend over its sequence's cached keys up to its position. last: the
  /// forward's final layer (a backend that measures attention entropy records it there).
  virtual void attention(uint32_t layer, bool last) = 0;
  /// x += attention output . wo^T.
  virtual void project_out_add(uint32_t layer) = 0;
  /// gate | up = normed . [w_gate | w_up]^T, then gate = silu(gate) * up.
  virtual void ffn_gate_up(uint32_t layer) = 0;
  /// x += gate . w_down^T.
  virtual void ffn_down_add(uint32_t layer) = 0;
  /// For the rows that want logits: the output norm, then the output head.
  virtual void output_head() = 0;
};

}  // namespace fw
