// weight_view: a non-owning view of one weight matrix in one element format (rows of k elements,
// as GGUF stores them), in its file layout or in a kernel path's packed layout. What the model's
// weights hand to a device. Thread-safety: plain value.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/format/ggml_type.hpp"

namespace fw::cpu {

/// A non-owning view of one weight matrix.
struct weight_view {
  ggml_type type = ggml_type::f32;
  const uint8_t* data = nullptr;
  int64_t k = 0;         ///< input features (row length)
  int64_t n = 0;         ///< output features (rows)
  size_t row_bytes = 0;  ///< bytes per row
  bool packed = false;   ///< data is in the kernel path's packed layout (dot_kernel::pack)
  /// fw_w8a8 with static activation quantization: the per-tensor activation scale from
  /// calibration (0: dynamic, each token's own scale).
  float act_scale = 0.f;
};

}  // namespace fw::cpu
