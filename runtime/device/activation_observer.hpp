// activation_observer: sees the inputs of a forward pass's matrix products (and each layer's
// output) as the backend computes them. Calibration (runtime/quant) records activation
// statistics through it; the quality report compares two models layer by layer. A backend
// without an observer pays one null check per product.
// Thread-safety: called on the thread running forward(), one call at a time per backend.
#pragma once

#include <cstdint>

namespace fw {

/// Where in a layer the rows were seen.
enum class activation_site : uint8_t {
  qkv_in,      ///< the attention RMSNorm's output: the input of q, k and v
  attn_out_in, ///< the attention output: the input of wo
  gate_up_in,  ///< the FFN RMSNorm's output: the input of gate and up
  down_in,     ///< silu(gate) * up: the input of down
  layer_out,   ///< the residual stream after the layer
};
inline constexpr int activation_site_count = 5;

class activation_observer {
 public:
  virtual ~activation_observer() = default;
  /// rows rows of width floats, ld floats apart, one per batch row in batch order.
  virtual void observe(uint32_t layer, activation_site site, const float* x, int64_t ld, int64_t rows,
                       int64_t width) = 0;
};

}  // namespace fw
