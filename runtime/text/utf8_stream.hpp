// utf8_stream: joins token pieces into text that never splits a multi-byte UTF-8 character, so
// streamed output is always valid UTF-8 (a piece may end in the middle of a character).
// Thread-safety: plain value, one per stream.
#pragma once

#include <string>
#include <string_view>

namespace fw {

class utf8_stream {
 public:
  /// Adds bytes; returns the longest prefix of pending bytes that ends on a character boundary.
  std::string push(std::string_view bytes);
  /// Returns whatever is pending (possibly an incomplete character) and clears it.
  std::string flush();

 private:
  std::string pending_;
};

}  // namespace fw
