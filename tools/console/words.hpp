// words: the console's line splitting, shared by the session and :format's arguments: trim
// (blanks and line ends at both ends) and split_word ("word rest..." at the first blank).
// Thread-safety: pure functions.
#pragma once

#include <string_view>
#include <utility>

namespace fw::console {

inline std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

/// Splits "word rest..." at the first blank; rest is trimmed.
inline std::pair<std::string_view, std::string_view> split_word(std::string_view s) {
  const size_t sp = s.find_first_of(" \t");
  if (sp == std::string_view::npos) return {s, {}};
  return {s.substr(0, sp), trim(s.substr(sp))};
}

}  // namespace fw::console
