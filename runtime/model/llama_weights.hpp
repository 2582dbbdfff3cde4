// llama_weights: views of a Llama-family model's tensors inside a mapped GGUF file, each checked
// for presence, shape and a supported type. Matrices stay in the mapping (never copied); norm
// and bias vectors are converted to f32 copies when stored in another type. Fused file tensors
// (Phi-3's attn_qkv and its ffn_up holding gate | up) are split into row views of the one
// tensor, so every backend sees wq, wk, wv, w_gate, w_up alike. The gguf_file must outlive the
// views. Thread-safety: immutable after construction.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "kernels/format/weight_view.hpp"
#include "runtime/base/expected.hpp"
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/model/model_config.hpp"

namespace fw {

struct llama_layer_weights {
  const float* attn_norm = nullptr;
  cpu::weight_view wq, wk, wv, wo;
  /// q | k | v biases, q_dim + 2 kv_dim values (Qwen2); null: none. Parts a file lacks are 0.
  const float* qkv_bias = nullptr;
  const float* wo_bias = nullptr;  ///< n_embd values; null: none
  /// Per-head RMSNorm weights of q and k (head_dim values each; Qwen3); null: none.
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  const float* ffn_norm = nullptr;
  cpu::weight_view w_gate, w_up, w_down;
};

/// How to load matrices: in place (default) or converted to another type at load time (owned
/// copies; e.g. f32 for exactness checks, or a lighter type for a self-quantized draft).
struct weight_load_options {
  std::optional<ggml_type> convert_to;
  /// Keep only the first n layers (a self-speculation draft: the target's first layers plus its
  /// output head). 0 = all.
  uint32_t max_layers = 0;
};

class llama_weights {
 public:
  static expected<llama_weights> from_gguf(std::shared_ptr<const gguf_file> file,
                                           const model_config& config,
                                           const weight_load_options& options = {});

  cpu::weight_view tok_embd;  ///< [n_vocab rows of n_embd]
  cpu::weight_view output;    ///< the output head (tok_embd when tied)
  bool tied_output = false;
  const float* output_norm = nullptr;
  const float* output_bias = nullptr;  ///< n_vocab values; null: none
  /// rope_freqs.weight (n_rot / 2 divisors of each pair's angle, Llama 3.1); null: none.
  const float* rope_freqs = nullptr;
  std::vector<llama_layer_weights> layers;

  /// Every distinct matrix type used, for kernel selection and reports.
  std::vector<ggml_type> matrix_types() const;
  /// Bytes of all matrices (what a decode step streams).
  uint64_t matrix_bytes() const;
  /// True when the bytes are the mapped file's (a backend that packed a copy may drop those
  /// pages: they fault back in from the file), false for load-time converted copies, whose
  /// pages must never be dropped (they would read back as zeros).
  bool in_file_mapping(const void* p, size_t n) const { return file_ && file_->maps(p, n); }

 private:
  std::shared_ptr<const gguf_file> file_;
  std::vector<std::unique_ptr<std::vector<float>>> converted_;  ///< f32 copies of norm vectors
  std::vector<std::unique_ptr<std::vector<uint8_t>>> converted_matrices_;  ///< convert_to copies
};

}  // namespace fw
