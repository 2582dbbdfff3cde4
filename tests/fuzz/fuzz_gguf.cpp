// libFuzzer target: the GGUF reader (header, metadata, tensor table, data offsets) on arbitrary
// bytes. A file it accepts must be safe to walk: every metadata value and tensor view is read.
#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/gguf/gguf_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = fw::gguf_file::from_bytes(std::span<const uint8_t>(data, size), "fuzz");
  if (!f) return 0;
  const auto& file = **f;
  size_t sink = file.version();
  for (const auto& t : file.tensors()) {
    const auto v = t.view();
    sink += static_cast<size_t>(v.n) + static_cast<size_t>(v.k) + t.name.size();
    if (t.data && t.n_bytes > 0) sink += t.data[t.n_bytes - 1];  // in bounds
  }
  for (const auto& [key, value] : file.metadata()) sink += key.size() + value.array_size();
  return sink == 0xdeadbeef ? 1 : 0;
}
