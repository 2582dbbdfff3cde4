#include "runtime/text/utf8_stream.hpp"

namespace fw {
namespace {

// Number of bytes at the end of s that form an incomplete (but so far valid-looking) sequence.
size_t incomplete_tail(const std::string& s) {
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    size_t need = 0;
    if ((c & 0xE0) == 0xC0) need = 2;
    else if ((c & 0xF0) == 0xE0) need = 3;
    else if ((c & 0xF8) == 0xF0) need = 4;
    else return 0;  // ASCII or invalid lead: nothing to hold back
    return back < need ? back : 0;
  }
  return 0;
}

}  // namespace

std::string utf8_stream::push(std::string_view bytes) {
  pending_.append(bytes);
  const size_t hold = incomplete_tail(pending_);
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string utf8_stream::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace fw
