// config: flywheel's typed, validated configuration, parsed once from TOML (conf/default.toml and
// conf/examples/*.toml show every key with comments).
//
// Each section is a plain struct with built-in defaults, one header each in sections/ (std only, no
// toml++); enumerated keys are parsed into enums. A component receives only its own section (the
// scheduler gets scheduler_section, the sampler a sampling_params made from sampling_section).
// Parsing rejects, with file:line:column and the allowed keys, values or range: TOML syntax errors
// (errc::malformed_file), unknown sections and keys, wrong types, out-of-range numbers, values not in
// an enumeration and inconsistent combinations (errc::invalid_argument). All errors of a file are
// reported at once, one per line, in file order.
//
// Paths: relative paths (model.path, plugins.dir, plugins.load.path, speculative.draft_model) are
// kept as written and resolve against the process's current directory, not the config file's
// folder; the shipped configs assume the repository root as the current directory.
//
// Overrides: set("sampling.temperature", "0.2") applies one value with the same checks as the file
// (used by CLI flags and the console's :set); keys() lists what set() accepts.
//
// Thread-safety: plain value types; a config is read-only after start-up unless its owner calls
// set(). None of this header pulls in toml++ (only config*.cpp do).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/config/sections/alerts_section.hpp"
#include "runtime/config/sections/compute_section.hpp"
#include "runtime/config/sections/device_section.hpp"
#include "runtime/config/sections/kv_cache_section.hpp"
#include "runtime/config/sections/logging_section.hpp"
#include "runtime/config/sections/model_section.hpp"
#include "runtime/config/sections/plugins_section.hpp"
#include "runtime/config/sections/sampling_section.hpp"
#include "runtime/config/sections/scheduler_section.hpp"
#include "runtime/config/sections/server_section.hpp"
#include "runtime/config/sections/speculative_section.hpp"
#include "runtime/config/sections/node_section.hpp"
#include "runtime/config/sections/quantize_section.hpp"
#include "runtime/config/sections/rollout_section.hpp"
#include "runtime/config/sections/supervisor_section.hpp"

namespace fw {

// -- the whole configuration --

/// The effective configuration: built-in defaults, then a file, then overrides.
struct config {
  model_section model;
  compute_section compute;
  kv_cache_section kv_cache;
  sampling_section sampling;
  scheduler_section scheduler;
  logging_section logging;
  speculative_section speculative;
  plugins_section plugins;
  server_section server;
  alerts_section alerts;
  supervisor_section supervisor;
  rollout_section rollout;
  node_section node;
  quantize_section quantize;
  std::vector<device_section> devices = {device_section{}};  ///< default: one cpu device, role both
  std::string source_path;  ///< the file parsed (or the name given to from_string); empty: built-in

  /// Reads and parses a TOML file; errc::io_error when it cannot be read.
  [[nodiscard]] static expected<config> from_file(const std::string& path);
  /// Parses TOML text; name stands for the file in error messages and becomes source_path.
  [[nodiscard]] static expected<config> from_string(std::string_view text, std::string_view name);

  /// Checks the rules that involve several keys (e.g. draft = "model" needs draft_model);
  /// single values are checked when parsed or set. errc::invalid_argument, one problem per line.
  [[nodiscard]] expected<void> validate() const;

  /// Sets one value from text, checked like the file's value; then validate(). On error nothing
  /// changes. key is "section.key" or a bare key that names one field ("temperature", "draft").
  /// Text is read as TOML ("0.2", "[\"a\", \"b\"]", "\"quoted\"") except that string keys take
  /// it as is, and a list of strings takes a bare word as a one-element list ("" empties it).
  /// Arrays of tables (devices, plugins.load) are not settable.
  expected<void> set(std::string_view key, std::string_view value);
  /// Applies several set()s, then validate() once; all or nothing. Errors name the key.
  expected<void> set_all(const std::vector<std::pair<std::string, std::string>>& values);
  /// The current value of key (same key forms as set()) as TOML text.
  [[nodiscard]] expected<std::string> get(std::string_view key) const;
  /// Every key set() accepts, as "section.key", in file order.
  [[nodiscard]] static std::vector<std::string> keys();

  /// The effective configuration as TOML that from_string() parses back to an equal config.
  [[nodiscard]] std::string to_toml() const;
  /// to_toml() headed by a comment naming the source (for the console's :config).
  [[nodiscard]] std::string describe() const;

  bool operator==(const config&) const = default;
};

}  // namespace fw
