// Element-wise and row-wise float ops of the Llama forward pass (scalar; the compiler vectorizes
// the simple loops). Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace fw::cpu {

/// y = x / sqrt(mean(x^2) + eps) * w   (y may alias x)
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);

/// Rotary embedding, "normal" (adjacent pairs) mode, applied in place to n_head heads of
/// head_dim values at position pos; the first n_rot dims of each head rotate.
void rope_norm(float* x, int n_head, int head_dim, int n_rot, int pos, float freq_base,
               float freq_scale);

/// gate[i] = silu(gate[i]) * up[i]
void silu_mul(float* gate, const float* up, int64_t n);

/// In-place softmax over n values; returns nothing, tolerates -inf entries.
void softmax(float* x, int64_t n);

/// y[i] += x[i]
void add_inplace(float* y, const float* x, int64_t n);

}  // namespace fw::cpu
