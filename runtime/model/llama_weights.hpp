// llama_weights: views of a Llama model's tensors inside a mapped GGUF file, each checked for
// presence, shape and a supported type. Matrices stay in the mapping (never copied); norm
// vectors are converted to f32 copies when stored in another type. The gguf_file must outlive
// the views. Thread-safety: immutable after construction.
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
  std::vector<llama_layer_weights> layers;

  /// Every distinct matrix type used, for kernel selection and reports.
  std::vector<ggml_type> matrix_types() const;
  /// Bytes of all matrices (what a decode step streams).
  uint64_t matrix_bytes() const;

 private:
  std::shared_ptr<const gguf_file> file_;
  std::vector<std::unique_ptr<std::vector<float>>> converted_;  ///< f32 copies of norm vectors
  std::vector<std::unique_ptr<std::vector<uint8_t>>> converted_matrices_;  ///< convert_to copies
};

}  // namespace fw
