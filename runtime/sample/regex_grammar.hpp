// regex_grammar: a regular expression -> grammar rules, for constrained decoding: vLLM's
// guided_regex (the whole answer matches) and JSON Schema's `pattern` (a string's value
// contains a match, written as JSON string text).
// Syntax (a common subset of ECMAScript / Python `re`): literals (UTF-8 characters included),
// `.` (any character but a line break), classes `[...]` / `[^...]` of ASCII characters and
// ranges (a negated class also takes every non-ASCII character), escapes \d \D \w \W \s \S \n
// \r \t \f \v \xHH \uHHHH and escaped punctuation, groups `(...)` and `(?:...)`, alternation `|`,
// quantifiers `*` `+` `?` `{n}` `{n,}` `{n,m}` (a lazy `?` after one is accepted: it changes
// which match is found, not which texts match), `^` at the start and `$` at the end (of a
// pattern without a top-level `|`). Classes are ASCII: `\s` is ASCII whitespace (not U+00A0 or
// U+2028) and `.` takes every non-ASCII character. Refused by name: backreferences, lookaround,
// word boundaries, inline flags, non-ASCII class members, a ']' first in a class, counts above
// json_schema_max_bound, groups nested deeper than 64, a grammar over 2M elements, and repeating
// what can match nothing (`(a*)*`). Highly ambiguous patterns (`(a?){300}`) may refuse texts once
// a byte needs more ways than grammar_recognizer's limits.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "runtime/base/expected.hpp"
#include "runtime/sample/grammar.hpp"

namespace fw {

enum class regex_target : uint8_t {
  text,         ///< the bytes themselves
  json_string,  ///< the text of a JSON string: '"', '\\' and line breaks / tabs written as escapes
};

/// Adds the rules of `pattern` to `g` and returns the rule matching exactly the texts the
/// pattern matches whole. `search`: as JSON Schema's pattern, a text that contains a match
/// (unless the pattern is anchored with ^ / $ at that end). Errors name the pattern's offset.
expected<uint32_t> add_regex(grammar& g, std::string_view pattern, regex_target target, bool search);

/// The grammar of texts `pattern` matches whole (guided_regex).
expected<std::shared_ptr<const grammar>> regex_grammar(std::string_view pattern);

}  // namespace fw
