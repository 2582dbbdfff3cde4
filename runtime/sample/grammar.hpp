// grammar: a context-free grammar over bytes, the form constrained decoding runs on (what a JSON
// schema compiles to, json_schema.hpp). A rule is a list of alternatives; an alternative a
// sequence of elements, each a byte set or a reference to a rule. The elements of every
// alternative live in one flat array, each alternative closed by an `end` element, so a position
// in the grammar is one index (what grammar_recognizer keeps on its stacks).
// Grammars are built by code, not parsed; left recursion (a rule reaching itself before any
// byte, e.g. a schema that is only a reference to itself) is found by left_recursive_rule(), and
// grammar_recognizer refuses to expand past its budget rather than loop.
// Thread-safety: built by one thread, then read-only (shared by the recognizers of a request).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fw {

/// A set of bytes.
struct byte_set {
  std::array<uint64_t, 4> bits{};
  [[nodiscard]] bool has(uint8_t c) const { return (bits[c >> 6] >> (c & 63)) & 1u; }
  byte_set& add(uint8_t c) {
    bits[c >> 6] |= uint64_t{1} << (c & 63);
    return *this;
  }
  byte_set& add_range(uint8_t lo, uint8_t hi) {
    for (unsigned c = lo; c <= hi; ++c) add(static_cast<uint8_t>(c));
    return *this;
  }
  byte_set& remove(char c) {
    const auto u = static_cast<uint8_t>(c);
    bits[u >> 6] &= ~(uint64_t{1} << (u & 63));
    return *this;
  }
  byte_set& add_all(std::string_view bytes) {
    for (char c : bytes) add(static_cast<uint8_t>(c));
    return *this;
  }
  bool operator==(const byte_set&) const = default;
};

class grammar {
 public:
  struct element {
    enum class kind : uint8_t { bytes, rule, end };
    kind k = kind::end;
    uint32_t index = 0;  ///< bytes: the set's index; rule: the rule's id
  };

  /// A new rule with no alternatives yet (a rule may be referenced before it has them).
  uint32_t add_rule();
  /// Appends an alternative to `rule` (an empty sequence matches the empty string).
  void add_alternative(uint32_t rule, const std::vector<element>& sequence);
  /// An element matching one byte of `set`.
  element bytes(const byte_set& set);
  /// An element matching byte c.
  element byte(char c) { return bytes(byte_set{}.add(static_cast<uint8_t>(c))); }
  /// Elements matching `text` byte for byte, appended to `out`.
  void literal(std::string_view text, std::vector<element>& out);
  /// Code point `cp`'s UTF-8 bytes (the compilers' one encoder; runtime/text's is not a dependency here).
  static std::string utf8(uint32_t cp);
  /// Elements matching code point `cp`'s UTF-8 bytes, appended to `out`.
  void character(uint32_t cp, std::vector<element>& out);
  static element ref(uint32_t rule) { return {element::kind::rule, rule}; }
  /// Appends to `rule` one alternative per UTF-8 lead byte form of a character of 2 to 4 bytes
  /// (RFC 3629's table: no overlongs, no surrogates).
  void add_utf8_multibyte(uint32_t rule);
  /// Appends to `rule` alternatives matching one character (UTF-8) of the code point range
  /// [lo, hi] (within 0..0x10FFFF; surrogates are skipped): one alternative per run of code points
  /// whose encodings form a product of byte ranges.
  void add_codepoints(uint32_t rule, uint32_t lo, uint32_t hi);
  /// A rule matching up to n of `e` (n < 0: any number). Its empty alternative is last: a
  /// recognizer expands the last alternative in its loop and the others by recursion, so
  /// skipping optional parts in a row stays shallow.
  uint32_t at_most(element e, int64_t n);

  void set_root(uint32_t rule) { root_ = rule; }
  [[nodiscard]] uint32_t root() const { return root_; }
  [[nodiscard]] size_t rules() const { return alternatives_.size(); }
  /// Start positions of `rule`'s alternatives.
  [[nodiscard]] const std::vector<uint32_t>& alternatives(uint32_t rule) const { return alternatives_[rule]; }
  [[nodiscard]] const element& at(uint32_t position) const { return elements_[position]; }
  [[nodiscard]] const byte_set& set(uint32_t index) const { return sets_[index]; }
  /// A rule that can reach itself without a byte matched in between (left recursion: expanding
  /// it never ends), or -1. Builders check this before use.
  [[nodiscard]] int64_t left_recursive_rule() const;
  /// Elements in all alternatives (a size measure).
  [[nodiscard]] size_t size() const { return elements_.size(); }

 private:
  std::vector<std::vector<uint32_t>> alternatives_;
  std::vector<element> elements_;
  std::vector<byte_set> sets_;
  uint32_t root_ = 0;
};

}  // namespace fw
