// libFuzzer target: a calibration file (the user's queries for calibrated quantization) on
// arbitrary bytes, and the typo perturbation of each query it keeps. A file it accepts keeps its
// promises: between min_queries and max_queries non-empty queries, and a perturbed copy of valid
// UTF-8 is valid UTF-8 (sequences are never split).
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/quant/calibration_set.hpp"

namespace {

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fw::calibration_options o;
  o.max_queries = 16;
  o.min_queries = 2;
  o.noise = 0.5;
  auto queries = fw::parse_calibration_text(text, "fuzz.txt", o);
  if (!queries) return 0;
  // max_queries originals plus up to one perturbed copy each.
  if (queries->size() < o.min_queries || queries->size() > 2 * o.max_queries) __builtin_trap();
  for (const auto& q : *queries) {
    if (q.empty()) __builtin_trap();
    const std::string p = fw::perturb_text(q, 7);
    if (valid_utf8(q) && !valid_utf8(p)) __builtin_trap();
  }
  return 0;
}
