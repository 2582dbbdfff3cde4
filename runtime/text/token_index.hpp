// token_index: token text -> id, looked up by string_view without building a std::string.
// Thread-safety: a plain container; const lookups from many threads are safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace fw {

struct token_text_hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

using token_index = std::unordered_map<std::string, int32_t, token_text_hash, std::equal_to<>>;

}  // namespace fw
