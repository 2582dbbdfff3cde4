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
//   default (missing or "default"): punctuation runs, GPT-2 regex, \p{N}+, then [0-9]{3}.
// The regexes are hand-written matchers over code points, ported rule for rule from llama.cpp's
// custom splitters (including their quirks), with categories from unicode_text.
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

enum class pre_tokenizer_kind { default_bpe, gpt2, smollm, llama3 };

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

  /// Splits code points into words; returns each word's length in code points, in order. The
  /// lengths sum to cpts.size() and are all > 0.
  [[nodiscard]] std::vector<size_t> split(std::span<const uint32_t> cpts) const;

  /// Convenience for tests and tools: UTF-8 in (invalid bytes become U+FFFD), UTF-8 words out.
  [[nodiscard]] std::vector<std::string> split_text(std::string_view text) const;

 private:
  pre_tokenizer_kind kind_;
  bool ignore_merges_;
  bool default_add_bos_;
};

}  // namespace fw
