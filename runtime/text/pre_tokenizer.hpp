// pre_tokenizer: splits text into the words that byte-level BPE then encodes one at a time.
// Each kind reproduces what llama.cpp does for the matching tokenizer.ggml.pre value:
//   smollm  (also starcoder, refact, command-r, codeshell, exaone, minerva-7b, mellum2):
//           every \p{N} code point on its own, then the GPT-2 regex inside each piece;
//   gpt2    (gpt-2, phi-2, mpt, olmo, jina-*, ...): the GPT-2 regex
//           's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//           (contractions case-sensitive; a whitespace run followed by a non-space leaves its
//           last character to prefix the next word);
//   llama3  (llama-bpe, llama-v3, dbrx, smaug-bpe, falcon3, ...): the Llama-3 regex with
//           case-insensitive contractions, \p{N}{1,3} and newline-aware whitespace;
//   qwen2   (deepseek-r1-qwen, stablelm2, megrez, hunyuan, ...): llama3 with \p{N} (single digits);
//   qwen35: qwen2 with combining marks inside letter runs;
//   default (missing or "default"): punctuation runs, GPT-2 regex, \p{N}+, then [0-9]{3};
//   deepseek-llm, deepseek-coder: llama.cpp's regex lists (newlines, letter runs, punctuation
//           runs, CJK runs, digits), applied in sequence, each splitting the previous pieces;
//   falcon: punctuation runs incl. '`', the GPT-2 regex, then [0-9]{3}.
// Where llama.cpp has a hand-written splitter (gpt2, llama3, qwen2, qwen35 regexes) this has a
// matcher ported rule for rule, quirks included, with categories from unicode_text. The other
// patterns run on PCRE2 (regex_split), fed the text the way llama.cpp feeds std::regex.
// Thread-safety: immutable value; split() is const and safe to call concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/expected.hpp"

namespace fw {

enum class pre_tokenizer_kind {
  default_bpe, gpt2, smollm, llama3, qwen2, qwen35, deepseek_llm, deepseek_coder, falcon
};

class pre_tokenizer {
 public:
  /// Maps a tokenizer.ggml.pre value ("" means "default") to a splitter; errc::unsupported for
  /// names this build does not implement.
  static expected<pre_tokenizer> from_name(std::string_view name);

  /// A splitter of the given kind; ignore_merges and default_add_bos as llama.cpp sets them for
  /// the pre-tokenizer name (true for "llama3" and its aliases, false for "dbrx"/"smaug-bpe").
  explicit pre_tokenizer(pre_tokenizer_kind kind = pre_tokenizer_kind::gpt2, bool ignore_merges = false,
                         bool default_add_bos = false)
      : kind_(kind), ignore_merges_(ignore_merges), default_add_bos_(default_add_bos) {}

  [[nodiscard]] pre_tokenizer_kind kind() const { return kind_; }
  /// llama.cpp's ignore_merges: a word that is itself a vocabulary entry is emitted whole.
  [[nodiscard]] bool ignore_merges() const { return ignore_merges_; }
  /// llama.cpp's add_bos default for this pre-tokenizer (tokenizer.ggml.add_bos_token overrides).
  [[nodiscard]] bool default_add_bos() const { return default_add_bos_; }
  /// llama.cpp's clean_spaces for this name: detokenize drops the space before ?!., and in " 's".
  [[nodiscard]] bool clean_spaces() const { return clean_spaces_; }
  /// The tokenizer.ggml.pre value it was made from ("default" for none), e.g. "deepseek-r1-qwen".
  [[nodiscard]] const std::string& name() const { return name_; }
  /// The splitter family, e.g. "qwen2" for "deepseek-r1-qwen".
  [[nodiscard]] std::string_view kind_name() const;

  /// Splits code points into words; returns each word's length in code points, in order. The
  /// lengths sum to cpts.size() and are all > 0.
  [[nodiscard]] std::vector<size_t> split(std::span<const uint32_t> cpts) const;

  /// Convenience for tests and tools: UTF-8 in (invalid bytes become U+FFFD), UTF-8 words out.
  [[nodiscard]] std::vector<std::string> split_text(std::string_view text) const;

 private:
  pre_tokenizer_kind kind_;
  bool ignore_merges_;
  bool default_add_bos_;
  bool clean_spaces_ = true;
  std::string name_ = "default";
};

}  // namespace fw
