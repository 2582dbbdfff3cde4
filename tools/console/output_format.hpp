// output_format: the console's :format setting, the shape its answers must take: plain text, a
// JSON object (JSON mode), a JSON schema, a GBNF grammar, a regex, or exactly one of several
// choices, the same constraints the server's response_format / guided_* fields and `generate
// --json-schema / --grammar` give. Parsed from the command's arguments (a schema or grammar as
// text or @FILE), checked at once (schemas, regexes and grammars compiled: an error says where,
// as the engine's does), and applied to each turn's sampling parameters.
// Thread-safety: a value type.
#pragma once

#include <string>
#include <string_view>

#include "runtime/base/expected.hpp"
#include "runtime/sample/sampling_params.hpp"

namespace fw::console {

struct output_format {
  /// Only its constraint fields are set: json_object, json_schema, grammar, regex, choices.
  sampling_params constraint;
  std::string description = "plain text";

  /// ":format" arguments: "off", "json", "schema TEXT|@FILE", "grammar TEXT|@FILE", "regex RE",
  /// "choice A|B|...". Errors (errc::invalid_argument) say what was expected or what is wrong.
  [[nodiscard]] static expected<output_format> parse(std::string_view args);
  [[nodiscard]] bool constrained() const;
  /// Copies the constraint into p; a constrained answer decodes without a draft (max_draft_k 0),
  /// as the server and `generate` do.
  void apply(sampling_params& p) const;
};

}  // namespace fw::console
