// regex_split: one step of llama.cpp's unicode_regex_split for a pattern that llama.cpp has no
// hand-written splitter for, run with PCRE2 instead of std::regex.
// Within each piece of the text (the previous step's output), every match becomes a word and so
// does every stretch of text between two matches; pieces never merge.
// To give llama.cpp's results (not PCRE2's Unicode semantics), the subject is prepared the way
// llama.cpp prepares it for std::regex:
//   - a pattern with \p{L}/\p{N}/\p{P}/\p{M}/\p{S} runs byte-wise over a "collapsed" text: ASCII
//     stays, other whitespace becomes \v, other code points become one byte naming their category
//     (0xD1 number, 0xD2 letter, 0xD3 punctuation, 0xD4 mark, 0xD5 symbol, 0xD0 anything else), and
//     each \p{X} becomes a class of that byte plus X's ASCII members;
//   - any other pattern runs over the code points (UTF-8 mode, ASCII-only \s like std::wregex in
//     the C locale) with non-ASCII whitespace replaced by \v.
// $ matches only at the end of a piece (ECMAScript; PCRE2 would also match before a final \n).
// Patterns that can match the empty string are rejected (llama.cpp would emit empty words).
// Thread-safety: the compiled pattern is immutable and shared; split() allocates its match data per
// call, so one step may be used from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/text/unicode_text.hpp"

namespace fw {

class regex_split {
 public:
  /// Compiles a pattern written as in llama.cpp's llm_tokenizer_bpe (UTF-8); JIT when available.
  /// errc::invalid_argument for a pattern PCRE2 rejects or one that can match nothing.
  static expected<regex_split> compile(std::string_view pattern);

  /// Splits each piece (lengths in code points, summing to cpts.size()) further; flags[i] is
  /// codepoint_category(cpts[i]). Returns the new piece lengths, all > 0, in order.
  [[nodiscard]] std::vector<size_t> split(std::span<const uint32_t> cpts,
                                          std::span<const codepoint_flags> flags,
                                          const std::vector<size_t>& pieces) const;

  [[nodiscard]] const std::string& pattern() const { return pattern_; }
  /// True when the pattern uses Unicode categories and so runs over the collapsed text.
  [[nodiscard]] bool collapsed() const { return collapsed_; }

 private:
  struct compiled;
  regex_split() = default;

  std::shared_ptr<const compiled> code_;
  std::string pattern_;
  bool collapsed_ = false;
};

}  // namespace fw
