// tokenizer: text <-> token ids for byte-level BPE vocabularies ("gpt2" in GGUF), byte-exact with
// llama.cpp's llama_tokenize / llama_token_to_piece.
// Encoding: (1) when parse_special, control/unknown tokens are cut out of the raw text first
// (user-defined tokens always are), longest token text first, exactly as llama.cpp's
// tokenizer_st_partition; (2) each remaining text fragment is decoded as UTF-8 (invalid bytes ->
// U+FFFD), split into words by the pre_tokenizer, each word's UTF-8 bytes mapped through GPT-2
// bytes_to_unicode, and BPE merges applied lowest rank first (leftmost on ties).
// Decoding maps each token's characters back to bytes; control tokens render as their text when
// asked to. SentencePiece ("llama") vocabularies are not implemented: from_gguf says so.
// Ownership: owns copies of the vocabulary, merge ranks and piece caches (no reference to the
// gguf_file is kept). Thread-safety: immutable after construction; all methods are const and safe
// to call from many threads at once.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/text/pre_tokenizer.hpp"

namespace fw {

class gguf_file;

/// GGUF tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class token_type : int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

/// Everything needed to build a tokenizer without a file; what from_gguf reads.
struct tokenizer_vocab {
  std::vector<std::string> tokens;  ///< id -> token text (byte-level encoded)
  std::vector<int32_t> types;       ///< id -> token_type; empty means all normal
  std::vector<std::string> merges;  ///< "left right", rank = index
  std::string pre = "gpt2";         ///< tokenizer.ggml.pre
  int32_t bos = -1;                 ///< -1: none
  int32_t eos = -1;
  int32_t unk = -1;
  int32_t pad = -1;
  std::vector<int32_t> extra_eog;  ///< more end-of-generation ids (eot/eom/fim ids from a file)
  std::optional<bool> add_bos;  ///< unset: the pre-tokenizer's default (llama.cpp's rule)
  std::optional<bool> add_eos;  ///< unset: false
};

class tokenizer {
 public:
  /// Reads tokenizer.ggml.* from a model file. errc::unsupported for a tokenizer model other than
  /// "gpt2" or an unknown pre-tokenizer; errc::malformed_file for missing or inconsistent keys.
  static expected<tokenizer> from_gguf(const gguf_file& file);
  /// Builds from plain vectors (unit tests, tools). Validates ids and array lengths.
  static expected<tokenizer> from_vocab(tokenizer_vocab vocab);

  /// Text -> ids. add_special: prepend BOS / append EOS when the vocabulary asks for it.
  /// parse_special: recognise control-token text (e.g. "<|im_start|>") in `text`.
  [[nodiscard]] std::vector<int32_t> encode(std::string_view text, bool add_special,
                                            bool parse_special) const;
  /// Ids -> bytes (may end inside a UTF-8 character if the ids do). Out-of-range ids are skipped.
  [[nodiscard]] std::string decode(std::span<const int32_t> ids, bool render_special = true) const;
  /// One token's bytes; control/unknown tokens render as their text only when render_special.
  [[nodiscard]] std::string token_to_piece(int32_t id, bool render_special = true) const;

  [[nodiscard]] int32_t n_vocab() const { return static_cast<int32_t>(tokens_.size()); }
  [[nodiscard]] int32_t bos() const { return bos_; }
  [[nodiscard]] int32_t eos() const { return eos_; }
  [[nodiscard]] int32_t unk() const { return unk_; }
  [[nodiscard]] int32_t pad() const { return pad_; }
  [[nodiscard]] bool add_bos() const { return add_bos_; }
  [[nodiscard]] bool add_eos() const { return add_eos_; }
  /// End of generation: eos plus tokens llama.cpp recognises by text ("<|im_end|>",
  /// "<|endoftext|>", "<|eot_id|>", "<end_of_turn>", ...) and FIM pad/repo/sep tokens.
  [[nodiscard]] bool is_eog(int32_t id) const { return eog_.count(id) != 0; }
  [[nodiscard]] bool is_control(int32_t id) const;
  [[nodiscard]] token_type type(int32_t id) const;
  /// The raw vocabulary text of a token (byte-level encoded, e.g. "Ġworld"); empty if invalid.
  [[nodiscard]] const std::string& token_text(int32_t id) const;
  [[nodiscard]] std::optional<int32_t> find_token(std::string_view text) const;
  [[nodiscard]] const pre_tokenizer& pre() const { return pre_; }

 private:
  // Attribute bits, as llama.cpp's llama_token_attr.
  enum attr : uint32_t {
    attr_undefined = 0,
    attr_unknown = 1u << 0,
    attr_unused = 1u << 1,
    attr_normal = 1u << 2,
    attr_control = 1u << 3,
    attr_user_defined = 1u << 4,
    attr_byte = 1u << 5,
  };

  struct string_hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using string_map = std::unordered_map<std::string, int32_t, string_hash, std::equal_to<>>;

  tokenizer() = default;
  void encode_fragment(std::string_view text, std::vector<int32_t>& out) const;
  void encode_word(const std::string& word, std::vector<int32_t>& out) const;
  int32_t merge_rank(std::string_view left, std::string_view right, std::string& key) const;
  std::string render_piece(int32_t id) const;

  std::vector<std::string> tokens_;
  std::vector<uint32_t> attrs_;
  string_map token_to_id_;
  string_map merge_ranks_;                  // key: left + ' ' + right
  std::vector<int32_t> special_by_length_;  // control/user-defined/unknown ids, longest text first
  std::vector<std::string> pieces_;         // token_to_piece(id, true) cache
  std::unordered_set<int32_t> eog_;
  pre_tokenizer pre_;
  int32_t bos_ = -1, eos_ = -1, unk_ = -1, pad_ = -1;
  bool add_bos_ = false, add_eos_ = false;
};

/// Turns a stream of generated ids into text that never ends inside a UTF-8 character: bytes of
/// an incomplete trailing character are held back until the rest arrives (or flush()).
/// Ownership: borrows the tokenizer, which must outlive it. Thread-safety: one stream per thread.
class token_text_stream {
 public:
  explicit token_text_stream(const tokenizer& tok, bool render_special = true)
      : tok_(&tok), render_special_(render_special) {}

  /// Appends one token; returns the text that is now complete (possibly empty).
  std::string push(int32_t id);
  /// Returns whatever is still held back (possibly an incomplete character) and resets.
  std::string flush();

 private:
  const tokenizer* tok_;
  bool render_special_;
  std::string pending_;
};

}  // namespace fw
