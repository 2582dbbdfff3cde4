// libFuzzer target: the TOML config and its schema (every section, enumerated keys, arrays of
// tables) on arbitrary text: parse, validate, and print back every section a parsed config has.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = fw::config::from_string(text, "fuzz.toml");
  if (!c) return 0;
  (void)c->validate();
  return 0;
}
