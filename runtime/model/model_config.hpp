// model_config: the hyper-parameters of a decoder of the Llama family, read from the GGUF's own
// "<arch>.*" metadata ("qwen2.block_count", ...) and validated (positive sizes, GQA groups).
// The architectures share one layer sequence (runtime/model/arch) and differ in what
// model_arch_traits says: the rope pairing, per-head q/k norms, fused tensors, biases.
// Mistral files use the "llama" architecture. Anything else is a clear errc::unsupported.
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/base/expected.hpp"
#include "runtime/gguf/gguf_file.hpp"

namespace fw {

/// How rotary embedding pairs a head's dims: adjacent (i, i+1) as Llama, or halves (i, i+n_rot/2)
/// as GPT-NeoX, Qwen2/3 and Phi-3 (llama.cpp's LLAMA_ROPE_TYPE_NORM / _NEOX).
enum class rope_style : uint8_t { norm, neox };

/// What distinguishes one supported architecture from another (all else is the Llama sequence).
struct model_arch_traits {
  const char* name;        ///< general.architecture
  rope_style rope;
  bool qk_norm;            ///< per-head RMSNorm of q and k before rope (qwen3)
};

/// The traits of an architecture name, or nullptr when flywheel does not run it.
const model_arch_traits* find_model_arch(std::string_view name);
/// "llama, qwen2, qwen3, phi3": the names find_model_arch knows, for messages and README.
std::string supported_model_archs();

struct model_config {
  std::string architecture;  ///< general.architecture: llama | qwen2 | qwen3 | phi3
  std::string name;          ///< general.name, informational
  uint32_t n_vocab = 0;
  uint32_t n_ctx_train = 0;
  uint32_t n_embd = 0;
  uint32_t n_layer = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t n_ff = 0;
  uint32_t n_rot = 0;
  uint32_t head_dim = 0;  ///< <arch>.attention.key_length, else n_embd / n_head
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.f;
  float rope_freq_scale = 1.f;  ///< 1 / linear scaling factor
  rope_style rope = rope_style::norm;
  bool qk_norm = false;
  /// <arch>.attention.sliding_window (0: none). Informational: flywheel attends over the whole
  /// context, as llama.cpp does for these architectures (it ignores the key for llama files
  /// and disables it for phi3); the same computation up to the window, different beyond.
  uint32_t sliding_window = 0;

  uint32_t n_gqa() const { return n_head / n_head_kv; }
  uint32_t kv_dim() const { return n_head_kv * head_dim; }
  /// Width of q and of the attention output: n_head * head_dim (n_embd except in e.g. qwen3).
  uint32_t q_dim() const { return n_head * head_dim; }

  /// Reads and validates; n_vocab comes from the metadata or the token list.
  static expected<model_config> from_gguf(const gguf_file& file);
};

}  // namespace fw
