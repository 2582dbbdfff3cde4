// json_recognizer: JSON (RFC 8259) recognised byte by byte, for constrained decoding (the OpenAI
// server's response_format {"type": "json_object"}): feed() says whether a byte can continue a
// JSON object text, complete() whether the object is whole. The root is an object; whitespace is
// allowed where JSON allows it (and after the root); strings take any byte >= 0x20 except an
// unescaped quote or backslash (UTF-8 is not validated: a token may end inside a character);
// escapes are \" \\ \/ \b \f \n \r \t and \u with 4 hex digits; numbers as the grammar says
// (no leading zeros, no "+", no bare "." or "e"). Nesting deeper than max_depth is refused.
// A small trivially copyable value: a decoder copies it, feeds a token's bytes and keeps the copy
// only when every byte was accepted.
// Thread-safety: a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fw {

class json_recognizer {
 public:
  static constexpr int max_depth = 48;

  /// Whether byte c can come next; on false the state is unchanged.
  [[nodiscard]] bool feed(char c);
  /// feed() of every byte; on false the state is unspecified (feed a copy).
  [[nodiscard]] bool feed(std::string_view bytes) {
    for (char c : bytes)
      if (!feed(c)) return false;
    return true;
  }
  /// The root object is closed (only whitespace may follow).
  [[nodiscard]] bool complete() const { return mode_ == mode::done; }
  /// Containers open now (0 before the root object and after it).
  [[nodiscard]] int depth() const { return depth_; }
  /// Inside a string's text (not in an escape): any byte >= 0x20 but '"' and '\\' continues it
  /// and leaves the state as it is.
  [[nodiscard]] bool in_string_text() const { return mode_ == mode::string; }

 private:
  enum class mode : uint8_t {
    root,          // before the root object: whitespace or '{'
    value,         // a value (after ':' or ',' in an array)
    value_or_close,  // after '[': a value or ']'
    key_or_close,  // after '{': a key or '}'
    key,           // after ',' in an object: a key
    colon,         // after a key
    comma_or_close,
    string,
    escape,
    unicode,       // hex digits of \u left: hex_left_
    num_minus,     // after '-': a digit
    num_zero,      // a leading 0: '.', 'e' or the end
    num_int,
    num_dot,       // after '.': a digit
    num_frac,
    num_exp,       // after 'e': a sign or a digit
    num_exp_sign,  // after the sign: a digit
    num_exp_digits,
    literal,       // true / false / null: literal_ + lit_pos_
    done,
  };
  bool value_start(char c);
  bool after_value();  // a value ended: where the container (or root) goes next
  bool open(char c);
  bool close(char c);

  mode mode_ = mode::root;
  bool key_ = false;       // the string being read is a key
  uint8_t hex_left_ = 0;
  uint8_t lit_pos_ = 0;
  const char* literal_ = nullptr;
  int depth_ = 0;
  char stack_[max_depth] = {};  // '{' or '[' per open container
};

}  // namespace fw
