// token_pieces: every token's bytes and what the constraints ask of them, built once per
// sequence that is constrained (JSON mode, a JSON schema, guided_choice): the piece, whether it
// ends generation, whether it is plain JSON string text, the set of bytes it holds, and the
// tokens grouped by their first byte (so a step skips every token whose first byte cannot come
// next without looking at it).
// Thread-safety: built by one thread, then read-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/sample/grammar.hpp"
#include "runtime/text/tokenizer.hpp"

namespace fw {

class token_pieces {
 public:
  /// Tokens 0..n_vocab-1 (ids the tokenizer lacks and control tokens get empty pieces).
  token_pieces(const tokenizer& vocab, int32_t n_vocab);

  [[nodiscard]] int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  [[nodiscard]] const std::string& piece(int32_t t) const { return pieces_[static_cast<size_t>(t)]; }
  [[nodiscard]] bool eog(int32_t t) const { return eog_[static_cast<size_t>(t)] != 0; }
  /// The piece is plain JSON string text: non-empty, no '"', '\\' or control byte.
  [[nodiscard]] bool string_safe(int32_t t) const { return string_safe_[static_cast<size_t>(t)] != 0; }
  /// Every byte of the piece is in `s`.
  [[nodiscard]] bool bytes_within(int32_t t, const byte_set& s) const {
    const auto& m = bytes_[static_cast<size_t>(t)].bits;
    return ((m[0] & ~s.bits[0]) | (m[1] & ~s.bits[1]) | (m[2] & ~s.bits[2]) | (m[3] & ~s.bits[3])) == 0;
  }
  /// The non-empty pieces starting with byte b.
  [[nodiscard]] const std::vector<int32_t>& starting_with(uint8_t b) const { return by_first_[b]; }
  /// Tokens with no text that do not end generation (control tokens, unknown ids).
  [[nodiscard]] const std::vector<int32_t>& textless() const { return textless_; }
  /// Tokens that end generation.
  [[nodiscard]] const std::vector<int32_t>& endings() const { return endings_; }

 private:
  std::vector<std::string> pieces_;
  std::vector<uint8_t> eog_, string_safe_;
  std::vector<byte_set> bytes_;
  std::vector<std::vector<int32_t>> by_first_;
  std::vector<int32_t> textless_, endings_;
};

}  // namespace fw
