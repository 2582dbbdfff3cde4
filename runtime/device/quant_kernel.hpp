// quant_kernel: a kernel provider for some GGUF weight formats (today: from a plugin). The
// engine's built-in kernels (kernels/cpu/) stay the default; a plugin object is an alternative for
// the types it lists. Handed out by plugin_host as std::shared_ptr; each object keeps its library
// loaded until it is destroyed.
// Thread-safety: every member may be called concurrently (plugins' kernels are re-entrant).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "runtime/base/expected.hpp"

namespace fw {

class quant_kernel {
 public:
  virtual ~quant_kernel() = default;

  /// The registry name (from the config).
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual std::string version() const = 0;
  /// The ggml type ids (GGUF numbering) this kernel handles.
  [[nodiscard]] virtual std::span<const uint32_t> types() const = 0;
  [[nodiscard]] bool handles(uint32_t type) const {
    for (uint32_t t : types())
      if (t == type) return true;
    return false;
  }

  /// Called by the backend before each forward pass: a provider that follows plugin reloads
  /// switches to a newer version here, so a step never mixes two versions.
  virtual void begin_step() {}

  /// y[m][n] = x[m][k] . w^T for n weight rows of k elements of `type`, row_bytes apart; x and y
  /// are contiguous. errc::unsupported for a type this kernel does not handle.
  virtual expected<void> gemv(uint32_t type, const void* w, size_t row_bytes, int64_t k, int64_t n,
                              const float* x, int64_t m, float* y) = 0;
  /// k floats -> one row of `type`. errc::unsupported when the plugin has no quantizer.
  virtual expected<void> quantize_row(uint32_t type, const float* x, void* dst, int64_t k) = 0;
  /// One row of k elements of `type` -> k floats.
  virtual expected<void> dequantize_row(uint32_t type, const void* src, float* y, int64_t k) = 0;
};

}  // namespace fw
