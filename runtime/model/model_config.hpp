// model_config: the hyper-parameters of a Llama-architecture model, read from GGUF metadata
// ("<arch>.block_count", ...) and validated (positive sizes, heads divide the width, GQA groups).
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/base/expected.hpp"
#include "runtime/gguf/gguf_file.hpp"

namespace fw {

struct model_config {
  std::string architecture;  ///< "llama"
  std::string name;          ///< general.name, informational
  uint32_t n_vocab = 0;
  uint32_t n_ctx_train = 0;
  uint32_t n_embd = 0;
  uint32_t n_layer = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t n_ff = 0;
  uint32_t n_rot = 0;
  uint32_t head_dim = 0;
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.f;
  float rope_freq_scale = 1.f;  ///< 1 / linear scaling factor

  uint32_t n_gqa() const { return n_head / n_head_kv; }
  uint32_t kv_dim() const { return n_head_kv * head_dim; }

  /// Reads and validates; n_vocab comes from the metadata or the token list.
  static expected<model_config> from_gguf(const gguf_file& file);
};

}  // namespace fw
