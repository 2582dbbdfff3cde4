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

  // -- the row-split interface (v2 plugins): activations quantized once, rows split by the host --

  /// An activation row format (plugin_sdk.h FW_ACT_*) and its bytes for k values.
  struct act_spec {
    uint32_t format = 0;
    size_t row_bytes = 0;
  };
  /// True when act_format / quantize_act / gemm are available.
  [[nodiscard]] virtual bool row_split() const { return false; }
  virtual expected<act_spec> act_format(uint32_t type, int64_t k) {
    (void)type, (void)k;
    return make_error(errc::unsupported, name() + ": no row-split interface");
  }
  virtual expected<void> quantize_act(uint32_t type, const float* x, int64_t k, float static_scale, void* out) {
    (void)type, (void)x, (void)k, (void)static_scale, (void)out;
    return make_error(errc::unsupported, name() + ": no row-split interface");
  }
  /// y[j * ldy + i] for weight rows i in [0, n) and activation rows j in [0, m); may be called
  /// concurrently on disjoint row ranges.
  virtual expected<void> gemm(uint32_t type, const void* w, size_t row_bytes, int64_t k, int64_t n, const void* act,
                              size_t act_stride, int64_t m, float* y, int64_t ldy) {
    (void)type, (void)w, (void)row_bytes, (void)k, (void)n, (void)act, (void)act_stride, (void)m, (void)y, (void)ldy;
    return make_error(errc::unsupported, name() + ": no row-split interface");
  }
};

}  // namespace fw
