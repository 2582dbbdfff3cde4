// unicode_text: the small set of Unicode helpers the tokenizer needs, matching llama.cpp.
// - UTF-8 decoding that never fails: like llama.cpp's unicode_cpts_from_utf8, every byte that does
//   not start a sequence of the right shape becomes U+FFFD and decoding resumes at the next byte.
//   The check is structural only (lead byte + continuation bytes), exactly as llama.cpp does it, so
//   overlong forms and surrogates decode to their (odd) code points; values above U+10FFFF, which
//   llama.cpp cannot re-encode, are treated as invalid bytes too.
// - Code point categories (letter / number / mark / punctuation / symbol / separator / control /
//   undefined) from utf8proc, plus the White_Space property, as used by the GPT-2 style splitters.
// - GPT-2 byte-level encoding: bytes_to_unicode and its inverse.
// Thread-safety: stateless free functions and immutable tables; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fw {

inline constexpr uint32_t replacement_codepoint = 0xFFFD;

/// Category bits of one code point; mirrors llama.cpp's unicode_cpt_flags layout.
struct codepoint_flags {
  enum : uint16_t {
    undefined = 0x0001,    ///< Cn (unassigned) or beyond U+10FFFF
    number = 0x0002,       ///< \p{N}
    letter = 0x0004,       ///< \p{L}
    separator = 0x0008,    ///< \p{Z}
    mark = 0x0010,         ///< \p{M}
    punctuation = 0x0020,  ///< \p{P}
    symbol = 0x0040,       ///< \p{S}
    control = 0x0080,      ///< \p{C} other than Cn
    whitespace = 0x0100,   ///< White_Space property (regex \s)
  };
  uint16_t bits = 0;  ///< 0 only for "no code point" (outside the text)

  [[nodiscard]] bool is_letter() const { return (bits & letter) != 0; }
  [[nodiscard]] bool is_number() const { return (bits & number) != 0; }
  [[nodiscard]] bool is_whitespace() const { return (bits & whitespace) != 0; }
  [[nodiscard]] bool is_punctuation() const { return (bits & punctuation) != 0; }
  [[nodiscard]] bool is_symbol() const { return (bits & symbol) != 0; }
  [[nodiscard]] bool is_mark() const { return (bits & mark) != 0; }
  [[nodiscard]] bool is_control() const { return (bits & control) != 0; }
  [[nodiscard]] bool is_undefined() const { return (bits & undefined) != 0; }
  [[nodiscard]] bool empty() const { return bits == 0; }
};

/// Category bits for one code point (never empty for a real code point).
[[nodiscard]] codepoint_flags codepoint_category(uint32_t cpt);

/// Simple lowercase mapping (utf8proc); identity where there is none.
[[nodiscard]] uint32_t codepoint_to_lower(uint32_t cpt);

/// Decodes UTF-8, replacing each invalid byte by U+FFFD (llama.cpp semantics, see file comment).
[[nodiscard]] std::vector<uint32_t> utf8_to_codepoints(std::string_view text);

/// Decodes one code point at `offset`, advancing it; invalid bytes yield U+FFFD and advance by 1.
uint32_t utf8_decode_one(std::string_view text, size_t& offset);

/// Appends the UTF-8 form of `cpt` (must be <= U+10FFFF).
void append_utf8(std::string& out, uint32_t cpt);
[[nodiscard]] std::string codepoint_to_utf8(uint32_t cpt);

/// Length of the UTF-8 sequence announced by a lead byte (1 for ASCII and stray bytes, like
/// llama.cpp's unicode_len_utf8).
[[nodiscard]] size_t utf8_sequence_length(uint8_t lead);

/// Number of trailing bytes of `text` that form a truncated but so far well-formed UTF-8 sequence
/// (0..3). Streaming output holds these back until the rest of the character arrives.
[[nodiscard]] size_t utf8_incomplete_tail(std::string_view text);

/// GPT-2 bytes_to_unicode: the UTF-8 text of the printable character standing for `byte`.
[[nodiscard]] const std::string& byte_to_unicode_text(uint8_t byte);

/// Inverse of bytes_to_unicode for one code point; nullopt if `cpt` stands for no byte.
[[nodiscard]] std::optional<uint8_t> unicode_to_byte(uint32_t cpt);

}  // namespace fw
