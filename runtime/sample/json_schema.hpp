// json_schema: a JSON Schema -> the grammar of the JSON texts it admits, for constrained decoding
// (OpenAI's response_format {"type": "json_schema"}, vLLM's guided_json). What a decoder under
// the grammar writes validates against the schema:
// - type: object, array, string, number, integer, boolean, null, or a list of them;
// - object: properties, written in the schema's order (a required one always, an optional one
//   may be left out), required, additionalProperties (false; or a schema, which with no
//   properties makes a map from any key to that schema; beside properties only the declared
//   ones are written, which the schema admits);
// - array: items (a schema, or false after prefixItems), prefixItems, minItems, maxItems;
// - string: minLength, maxLength (in characters: an escape or a UTF-8 character counts one), or
//   pattern (the value contains a match, unless anchored with ^ / $; regex_grammar.hpp says
//   which regexes); a string's text is valid UTF-8 (a token may still end inside a character);
// - enum, const (any JSON values; with a type beside them, the values of that type); anyOf and
//   oneOf (as alternatives: a value matching two branches of a oneOf is not refused); allOf
//   with one schema; $ref to "#" or a JSON pointer
//   into the document ("#/$defs/Name", "#/definitions/Name"), recursion included;
// - the schema true or {} (any JSON value).
// Annotations are allowed and have no effect: title, description, default, examples, format
// (an annotation in JSON Schema 2020-12), $schema, $id, $comment, $defs, definitions,
// deprecated, readOnly, writeOnly, discriminator. Every other keyword (minimum, maximum,
// multipleOf, uniqueItems, not, if/then/else, patternProperties, ...) is refused by name rather
// than ignored, as is a schema of false at the root.
// Bounds the grammar sets on what a model may write: whitespace between tokens is nothing, one
// space, or a line break and an indent of up to max_whitespace spaces or tabs; numbers have up
// to 15 digits before the point (an integer is exact in a double), 16 after it and 2 in an
// exponent; \u escapes of surrogates are not written (such characters are written as UTF-8).
// The schema's JSON nests at most 128 levels.
// The text has no whitespace before or after the root value.
// Thread-safety: pure functions.
#pragma once

#include <memory>
#include <string_view>

#include "runtime/base/expected.hpp"
#include "runtime/sample/grammar.hpp"

namespace fw {

inline constexpr int json_schema_max_whitespace = 32;
/// Bounds on minLength / maxLength / minItems / maxItems a schema may set (each bound is a chain
/// of rules).
inline constexpr int64_t json_schema_max_bound = 4096;

/// The schema's grammar; an error names the place in the schema (a JSON pointer) and what is
/// wrong or not supported there.
expected<std::shared_ptr<const grammar>> json_schema_grammar(std::string_view schema_json);

}  // namespace fw
