// config_schema: the table of every configuration key - its name, kind, checks and printer - shared
// by config.cpp's file parser, set(), get() and to_toml(), so that a value is checked the same way
// wherever it comes from. Internal to runtime/config*.cpp: it includes toml++.
// Thread-safety: the tables are built once (function-local statics) and read-only afterwards.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "runtime/config/config.hpp"

namespace fw::config_schema {

/// How set() reads a value's text before the field checks it.
enum class value_kind {
  integer,        ///< TOML integer
  number,         ///< TOML float or integer
  string,         ///< the text as is (or a quoted TOML string)
  string_list,    ///< a TOML array of strings, or one bare string
  int_or_string,  ///< a TOML integer, else the text as a string (speculative.k)
  boolean,        ///< TOML true / false
  integer_list,   ///< a TOML array of integers ([[devices]] cores)
};

/// Empty on success; otherwise the problem, starting with the qualified key, without a location.
using check_result = std::optional<std::string>;

/// One key of an object of type T (a section, a [[devices]] entry, a [[plugins.load]] entry).
template <class T>
struct field {
  std::string_view key;
  value_kind kind;
  /// Checks node and stores it in the object; qualified names the key in messages.
  std::function<check_result(T&, const toml::node&, const std::string& qualified)> assign;
  /// The current value as TOML text.
  std::function<std::string(const T&)> print;
  /// What the checks accept, for people ("an integer, 1 to 1024"; the configuration reference).
  std::string allowed;
};

/// One [section] of plain keys; arrays names its keys that hold arrays of tables ([[plugins.load]]),
/// which config.cpp parses itself.
struct section {
  std::string_view name;
  std::vector<field<config>> fields;
  std::vector<std::string_view> arrays;

  [[nodiscard]] const field<config>* find(std::string_view key) const;
  /// Every key allowed in this section, fields then arrays.
  [[nodiscard]] std::vector<std::string_view> allowed() const;
};

/// The sections in file order (devices, an array of tables, is separate).
const std::vector<section>& sections();
const section* find_section(std::string_view name);
/// Keys of one [[devices]] entry and of one [[plugins.load]] entry.
const std::vector<field<device_section>>& device_fields();
const std::vector<field<plugin_load>>& plugin_load_fields();

// -- text helpers --

/// "a string", "an integer", "a floating-point number", "a table", ... for messages.
std::string type_name(const toml::node& n);
/// s as a TOML basic string, quoted and escaped.
std::string quote(std::string_view s);
/// "a, b, c".
std::string join(const std::vector<std::string_view>& items);
/// The candidate closest to word by edit distance when it is close enough; else empty.
std::string_view nearest(std::string_view word, const std::vector<std::string_view>& candidates);
/// " (did you mean 'x'?)" or empty.
std::string suggestion(std::string_view word, const std::vector<std::string_view>& candidates);

}  // namespace fw::config_schema
