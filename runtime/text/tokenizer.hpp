// tokenizer: text <-> token ids, byte-exact with llama.cpp's llama_tokenize / llama_token_to_piece /
// llama_detokenize, for two vocabulary kinds:
//   bpe: byte-level BPE ("gpt2" in GGUF): each fragment is decoded as UTF-8 (invalid bytes ->
//        U+FFFD), split into words by the pre_tokenizer, each word's UTF-8 bytes mapped through
//        GPT-2 bytes_to_unicode, and BPE merges applied lowest rank first (leftmost on ties);
//   spm: SentencePiece ("llama" in GGUF): spaces become "▁", a fragment at the start or right
//        after a special token gets a leading "▁" (tokenizer.ggml.add_space_prefix, default on),
//        and spm_encoder merges by token score with "<0xXX>" byte fallback.
// Before either, special tokens are cut out of the raw text, longest text first, exactly as
// llama.cpp's tokenizer_st_partition: control/unknown tokens only when parse_special,
// user-defined ones always; tokens llama.cpp marks rstrip/lstrip (all of Phi-3's) swallow the
// ASCII spaces after/before them.
// Decoding maps each token back to bytes (BPE characters through the byte map, "▁" -> space, byte
// tokens -> their byte); control tokens render as their text when asked to.
// Ownership: owns copies of the vocabulary, merge ranks and piece caches (no reference to the
// gguf_file is kept). Thread-safety: immutable after construction; all methods are const and safe
// to call from many threads at once.
#pragma once

#include <array>
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
#include "runtime/text/token_index.hpp"

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

enum class tokenizer_kind { bpe, spm };

/// Everything needed to build a tokenizer without a file; what from_gguf reads.
struct tokenizer_vocab {
  tokenizer_kind kind = tokenizer_kind::bpe;
  std::vector<std::string> tokens;  ///< id -> token text (byte-level encoded for bpe)
  std::vector<int32_t> types;       ///< id -> token_type; empty means all normal
  std::vector<std::string> merges;  ///< bpe: "left right", rank = index
  std::vector<float> scores;        ///< spm: id -> merge score; empty means all 0
  std::string pre = "gpt2";         ///< tokenizer.ggml.pre (bpe only)
  std::string name;                 ///< general.name: llama.cpp keys per-token fixes on it (Phi-3)
  int32_t bos = -1;                 ///< -1: none
  int32_t eos = -1;
  int32_t unk = -1;
  int32_t pad = -1;
  std::vector<int32_t> extra_eog;  ///< more end-of-generation ids (eot/eom/fim ids from a file)
  std::optional<bool> add_bos;  ///< unset: the pre-tokenizer's default (llama.cpp's rule)
  std::optional<bool> add_eos;  ///< unset: false
  std::optional<bool> add_space_prefix;  ///< unset: true for spm, false for bpe
};

/// One piece of a prompt that is already split at its special tokens: a token id, or (token < 0)
/// text that is tokenized without special-token parsing.
struct prompt_piece {
  int32_t token = -1;
  std::string_view text;
};

class tokenizer {
 public:
  /// Reads tokenizer.ggml.* from a model file (a vocab-only file is enough). errc::unsupported for
  /// a tokenizer model other than "gpt2"/"llama" or an unknown pre-tokenizer;
  /// errc::malformed_file for missing or inconsistent keys.
  static expected<tokenizer> from_gguf(const gguf_file& file);
  /// Builds from plain vectors (unit tests, tools). Validates ids and array lengths.
  static expected<tokenizer> from_vocab(tokenizer_vocab vocab);

  /// Text -> ids. add_special: prepend BOS / append EOS when the vocabulary asks for it.
  /// parse_special: recognise control-token text (e.g. "<|im_start|>") in `text`.
  [[nodiscard]] std::vector<int32_t> encode(std::string_view text, bool add_special,
                                            bool parse_special) const;
  /// The ids llama.cpp gives the concatenated prompt when exactly the token pieces are special
  /// tokens: text pieces get the same space prefix (spm) and strip rules (tokens marked
  /// rstrip/lstrip) as fragments of the whole text would. add_special as in encode().
  [[nodiscard]] std::vector<int32_t> encode_pieces(std::span<const prompt_piece> pieces, bool add_special) const;
  /// Ids -> bytes (may end inside a UTF-8 character if the ids do). Out-of-range ids are skipped.
  [[nodiscard]] std::string decode(std::span<const int32_t> ids, bool render_special = true) const;
  /// One token's bytes; control/unknown tokens render as their text only when render_special.
  [[nodiscard]] std::string token_to_piece(int32_t id, bool render_special = true) const;
  /// llama_detokenize: like decode, but the first piece loses one leading space when the
  /// vocabulary adds a space prefix (unless it is BOS, dropped with remove_special, as is a final
  /// EOS when the vocabulary adds one), and clean_spaces vocabularies drop spaces before ?!.,
  /// and in " 's"/" 'm"/" 're"/" 've"/" ' ".
  [[nodiscard]] std::string detokenize(std::span<const int32_t> ids, bool remove_special,
                                       bool unparse_special) const;

  [[nodiscard]] int32_t n_vocab() const { return static_cast<int32_t>(tokens_.size()); }
  [[nodiscard]] int32_t bos() const { return bos_; }
  [[nodiscard]] int32_t eos() const { return eos_; }
  [[nodiscard]] int32_t unk() const { return unk_; }
  [[nodiscard]] int32_t pad() const { return pad_; }
  [[nodiscard]] bool add_bos() const { return add_bos_; }
  [[nodiscard]] bool add_eos() const { return add_eos_; }
  [[nodiscard]] bool add_space_prefix() const { return add_space_prefix_; }
  [[nodiscard]] tokenizer_kind kind() const { return kind_; }
  /// For `flywheel info`: "bpe (gpt2 byte-level)" or "spm (sentencepiece)".
  [[nodiscard]] std::string_view kind_name() const;
  /// The pre-tokenizer as named in the file (e.g. "qwen2"); empty for spm, which has none.
  [[nodiscard]] std::string_view pre_name() const;
  /// End of generation: eos plus tokens llama.cpp recognises by text ("<|im_end|>",
  /// "<|endoftext|>", "<|eot_id|>", "<end_of_turn>", ...) and FIM pad/repo/sep tokens.
  [[nodiscard]] bool is_eog(int32_t id) const { return eog_.count(id) != 0; }
  /// Every end-of-generation token, ascending.
  [[nodiscard]] std::vector<int32_t> eog_ids() const;
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
    attr_lstrip = 1u << 6,
    attr_rstrip = 1u << 7,
  };
  using string_map = token_index;

  // A piece of the text being encoded: a token id, or (token = -1) raw text still to tokenize.
  struct fragment {
    int32_t token;
    std::string_view text;
  };

  tokenizer() = default;
  /// llama.cpp's tokenizer_st_partition: cuts special tokens out of `text`, appends to `out`.
  void partition(std::string_view text, bool parse_special, std::vector<fragment>& out) const;
  std::vector<int32_t> encode_fragments(const std::vector<fragment>& frags, bool add_special) const;
  void encode_fragment(std::string_view text, std::vector<int32_t>& out) const;
  void encode_spm_fragment(std::string_view text, bool space_prefix, std::vector<int32_t>& out) const;
  void encode_word(const std::string& word, std::vector<int32_t>& out) const;
  int32_t merge_rank(std::string_view left, std::string_view right, std::string& key) const;
  std::string render_piece(int32_t id) const;
  void set_strip_attributes(const std::string& model_name, const std::string& pre);

  std::vector<std::string> tokens_;
  std::vector<uint32_t> attrs_;
  string_map token_to_id_;
  string_map merge_ranks_;                  // key: left + ' ' + right
  std::vector<int32_t> special_by_length_;  // control/user-defined/unknown ids, longest text first
  std::vector<std::string> pieces_;         // token_to_piece(id, true) cache
  std::unordered_set<int32_t> eog_;
  std::vector<float> scores_;               // spm
  std::array<int32_t, 256> byte_tokens_{};  // spm: byte -> fallback id, -1 if none
  pre_tokenizer pre_;
  int32_t bos_ = -1, eos_ = -1, unk_ = -1, pad_ = -1;
  bool add_bos_ = false, add_eos_ = false;
  bool add_space_prefix_ = false;
  bool clean_spaces_ = false;
  tokenizer_kind kind_ = tokenizer_kind::bpe;
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
