// tiny_model: deterministic random-weight GGUF models of every architecture flywheel runs
// (llama, qwen2, qwen3, phi3) for tests. The files carry the metadata keys and tensor names
// llama.cpp's converter writes for that architecture (qwen2's q/k/v biases, qwen3's q/k norms
// and key_length, phi3's fused attn_qkv and gate|up ffn_up), and one of two vocabularies:
//   bpe: byte-level GPT-2 style (3 control tokens, 256 byte tokens, a few dozen merges), ChatML;
//   spm: SentencePiece style (<unk> <s> </s>, 256 <0xXX> byte-fallback tokens, scored pieces),
//        the Llama 2 chat template;
// so every loader, tokenizer and forward-pass path can run in milliseconds. A large shape (e.g.
// Qwen2-7B's sizes with --vocab-size 152064) makes files for speed measurements.
// The same spec always yields the same bytes. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/expected.hpp"
#include "kernels/format/ggml_type.hpp"

namespace fw {

/// Shape and content of a tiny model. Quantized weight types need n_embd and n_ff to be
/// multiples of 32 (the block size).
struct tiny_model_spec {
  std::string arch = "llama";  ///< llama | qwen2 | qwen3 | phi3
  std::string vocab = "bpe";   ///< bpe | spm
  /// Vocabulary size: the built-in tokens padded with unused filler tokens up to this (0: none).
  int vocab_size = 0;
  int head_dim = 0;           ///< 0: n_embd / n_head; else written as <arch>.attention.key_length
  int sliding_window = 0;     ///< <arch>.attention.sliding_window when > 0
  /// A rope_freqs.weight table (Llama 3.1's per-pair angle divisors), 1 + i / 4 for pair i.
  bool rope_freqs = false;
  /// One uniform draw per weight instead of a sum of 12 (same mean and variance), and quantized
  /// matrices made from random bytes (uniform values under a scale of the same variance): for
  /// large shapes, where 12 draws per weight take minutes.
  bool fast_random = false;
  int n_embd = 64;
  int n_layer = 2;
  int n_head = 4;
  int n_head_kv = 2;
  int n_ff = 128;
  int n_ctx = 256;
  ggml_type weight_type = ggml_type::f32;  ///< matrices incl. token_embd; norms stay f32
  bool tied_output = true;                 ///< no output.weight; logits reuse token_embd
  uint64_t seed = 1;
  float rope_base = 10000.0f;
  /// The layers' norm weights of the first outlier_channels channels are multiplied by
  /// outlier_scale: a few channels with much larger activations, as real LLMs have (what
  /// activation-aware quantization exists for). 0: none.
  int outlier_channels = 0;
  float outlier_scale = 1.0f;
};

/// Token ids of the tiny vocabulary's special tokens (same ids as SmolLM2).
inline constexpr int tiny_model_eot_id = 0;        ///< "<|endoftext|>": unknown token
inline constexpr int tiny_model_im_start_id = 1;   ///< "<|im_start|>": bos
inline constexpr int tiny_model_im_end_id = 2;     ///< "<|im_end|>": eos and padding
inline constexpr int tiny_model_first_byte_id = 3; ///< token of byte b is 3 + b

/// The vocabulary: 3 control tokens, the 256 byte tokens in byte order (GPT-2 bytes_to_unicode
/// spelling), then one token per merge, in merge order.
std::vector<std::string> tiny_model_tokens();
/// The merges ("a b", ranked by position); merge i produces token 259 + i.
std::vector<std::string> tiny_model_merges();
/// The ChatML chat template stored in tokenizer.chat_template.
const std::string& tiny_model_chat_template();

/// The SentencePiece vocabulary: <unk> <s> </s>, the 256 byte tokens <0x00>..<0xFF>, then
/// scored pieces ("▁" for a space); token_type and scores alongside.
struct tiny_spm_vocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
};
tiny_spm_vocab tiny_model_spm_vocab();
/// The Llama 2 chat template stored with the spm vocabulary.
const std::string& tiny_model_llama2_template();
/// The Phi-3 chat template (phi3 files; their vocabulary gains Phi-3's five chat tokens).
const std::string& tiny_model_phi3_template();

/// Builds the GGUF image. Fails with invalid_argument on an inconsistent spec.
expected<std::vector<uint8_t>> make_tiny_model(const tiny_model_spec& spec);
/// Builds the image and writes it to path.
expected<void> write_tiny_model(const tiny_model_spec& spec, const std::string& path);

}  // namespace fw
