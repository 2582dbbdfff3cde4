// gbnf_grammar: a GBNF grammar (llama.cpp's grammar format, which vLLM's guided_grammar also
// takes) -> grammar, for constrained decoding: the whole answer is a sentence of rule `root`.
// Syntax:
//   name ::= alternatives        a rule; names are letters, digits, '-' and '_'
//   a b c                        a sequence;   a | b   alternatives;   ( ... )   a group
//   "text"                       a literal (UTF-8), escapes \n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH
//   [a-z0-9_]  [^"\\]            a character class of code points (UTF-8 both in and out; a
//                                negated class takes every other character, surrogates excepted)
//   .                            any one character
//   x*  x+  x?  x{m}  x{m,}  x{m,n}   repetition (counts up to json_schema_max_bound)
//   # ...                        a comment to the end of the line
// Line breaks are whitespace; a rule ends where the next `name ::=` starts. Refused, naming the
// line and column: an undefined rule, a missing `root`, a rule defined twice, left recursion (a
// rule reaching itself before any character, e.g. `expr ::= expr "+" term`), token references
// (`<...>`), invalid UTF-8, and a grammar over 2M elements.
// Thread-safety: pure functions.
#pragma once

#include <memory>
#include <string_view>

#include "runtime/base/expected.hpp"
#include "runtime/sample/grammar.hpp"

namespace fw {

/// The grammar of the sentences of `text`'s rule `root`.
expected<std::shared_ptr<const grammar>> gbnf_grammar(std::string_view text);

}  // namespace fw
