#include "runtime/ngram_drafter.hpp"

#include <algorithm>

namespace fw {

std::vector<int32_t> ngram_lookup(std::span<const int32_t> h, int n_max, int k) {
  const int64_t len = static_cast<int64_t>(h.size());
  for (int n = std::min<int64_t>(n_max, len - 1); n >= 1; --n) {
    const int32_t* tail = h.data() + len - n;
    // The latest earlier occurrence whose continuation exists.
    for (int64_t start = len - n - 1; start >= 0; --start) {
      if (!std::equal(tail, tail + n, h.data() + start)) continue;
      const int64_t from = start + n;
      const int64_t take = std::min<int64_t>(k, len - from);
      if (take <= 0) continue;
      return std::vector<int32_t>(h.begin() + from, h.begin() + from + take);
    }
  }
  return {};
}

}  // namespace fw
