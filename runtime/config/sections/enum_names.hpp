// enum_names: the text of each value of a configuration enumeration, in one table per enum, so
// the parser, set()/get(), to_toml() and messages read one list. Thread-safety: constant data.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace fw {

template <class E, size_t N>
using enum_table = std::array<std::pair<E, std::string_view>, N>;

/// The value named `text` in table, if any.
template <class E, size_t N>
constexpr std::optional<E> enum_from_name(const enum_table<E, N>& table, std::string_view text) {
  for (const auto& [v, name] : table)
    if (name == text) return v;
  return std::nullopt;
}

/// The name of v in table ("" when missing: a table out of date with its enum).
template <class E, size_t N>
constexpr std::string_view enum_name(const enum_table<E, N>& table, E v) {
  for (const auto& [value, name] : table)
    if (value == v) return name;
  return {};
}

/// Every name of table, in table order (for "allowed: ..." messages).
template <class E, size_t N>
std::vector<std::string_view> enum_names(const enum_table<E, N>& table) {
  std::vector<std::string_view> out;
  for (const auto& [v, name] : table) out.push_back(name);
  return out;
}

}  // namespace fw
