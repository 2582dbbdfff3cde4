// config_reference: every configuration key as a Markdown reference (docs/config-reference.md),
// generated from the schema the parser checks with (runtime/config/config_schema): per section
// each key with its kind, its built-in default, what the checks allow, and what it does (the
// comment above the key in the shipped conf/default.toml, given as text). `flywheel
// config-reference` prints it; a test fails when docs/ and the schema disagree.
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

namespace fw {

/// The reference; default_toml: the text of conf/default.toml (its comments describe the keys).
[[nodiscard]] std::string config_reference_markdown(std::string_view default_toml);

}  // namespace fw
