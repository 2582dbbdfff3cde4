// Element-wise and row-wise float ops of the Llama forward pass. The public functions pick a path
// once, at first use, from best_simd_level(): AVX-512 (ops_avx512.cpp) when the host has it, else
// AVX2 (ops_avx2.cpp), else the scalar code. The scalar code is the reference (namespace ref) that
// both vector paths are tested against. Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fw::cpu {

/// y = x / sqrt(mean(x^2) + eps) * w   (y may alias x)
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);

/// Rotary embedding, "normal" (adjacent pairs) mode, applied in place to n_head heads of
/// head_dim values at position pos; the first n_rot dims of each head rotate.
void rope_norm(float* x, int n_head, int head_dim, int n_rot, int pos, float freq_base,
               float freq_scale);

/// Rotary embedding with a precomputed table (rope_cos_sin): "normal" pairs (2i, 2i+1), or
/// neox pairs (i, i + n_rot/2) as GPT-NeoX, Qwen2/3 and Phi-3 rotate. Scalar on every host (a
/// few hundred products per head: not worth a vector path); bit-equal to ref::rope_norm /
/// ref::rope_neox for the same table.
void rope_apply(float* x, int n_head, int head_dim, int n_rot, const float* cos_sin, bool neox);

/// gate[i] = silu(gate[i]) * up[i]
void silu_mul(float* gate, const float* up, int64_t n);

/// In-place softmax over n values; returns nothing, tolerates -inf entries.
void softmax(float* x, int64_t n);

/// y[i] += x[i]
void add_inplace(float* y, const float* x, int64_t n);

/// y[i] = x[i] as IEEE half, rounded to nearest even (a KV cache row being stored).
void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n);

/// The rotation of rope_norm at `pos` (n_rot even): cos_sin[2 i] = cos(theta_i), cos_sin[2 i + 1] =
/// sin(theta_i) for the n_rot / 2 pairs, with theta computed exactly as the reference does
/// (theta_0 = pos * freq_scale, theta_{i+1} = theta_i * freq_base^(-2 / n_rot)), so a path that
/// applies this table rotates bit-close to ref::rope_norm. freq_factors (n_rot / 2 values, e.g.
/// Llama 3.1's rope_freqs): pair i turns by theta_i / freq_factors[i], as ggml's rope does.
void rope_cos_sin(int n_rot, int pos, float freq_base, float freq_scale, float* cos_sin,
                  const float* freq_factors = nullptr);

/// rope_cos_sin's table for one call, on the stack for up to 256 rotated dims (heads are 64..256
/// wide), on the heap beyond.
class rope_table {
 public:
  rope_table(int n_rot, int pos, float freq_base, float freq_scale, const float* freq_factors = nullptr) {
    if (n_rot > stack_rot) heap_.resize(static_cast<size_t>(n_rot)), cs_ = heap_.data();
    rope_cos_sin(n_rot, pos, freq_base, freq_scale, cs_, freq_factors);
  }
  rope_table(const rope_table&) = delete;
  rope_table& operator=(const rope_table&) = delete;
  const float* data() const { return cs_; }

 private:
  static constexpr int stack_rot = 256;
  float stack_[stack_rot];
  std::vector<float> heap_;
  float* cs_ = stack_;
};

// -- per-path entry points (exposed for tests) --
namespace ref {  // scalar: the reference
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
void rope_norm(float* x, int n_head, int head_dim, int n_rot, int pos, float freq_base,
               float freq_scale);
/// Neox pairing (i, i + n_rot / 2), theta as rope_norm's.
void rope_neox(float* x, int n_head, int head_dim, int n_rot, int pos, float freq_base,
               float freq_scale);
void silu_mul(float* gate, const float* up, int64_t n);
void softmax(float* x, int64_t n);
void add_inplace(float* y, const float* x, int64_t n);
void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n);
}  // namespace ref
namespace avx2 {  // AVX2 + FMA + F16C; call only when host_features().has_avx2() (rope: the table path)
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
void silu_mul(float* gate, const float* up, int64_t n);
void softmax(float* x, int64_t n);
void add_inplace(float* y, const float* x, int64_t n);
/// x[i] = e^x[i] with exp256 (for tests of the vector exp).
void exp_inplace(float* x, int64_t n);
void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n);
}  // namespace avx2
namespace avx512 {  // AVX-512F; call only when host_features().has_avx512()
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
void rope_norm(float* x, int n_head, int head_dim, int n_rot, int pos, float freq_base,
               float freq_scale);
void silu_mul(float* gate, const float* up, int64_t n);
void softmax(float* x, int64_t n);
void add_inplace(float* y, const float* x, int64_t n);
/// x[i] = e^x[i] with exp512 (for tests of the vector exp).
void exp_inplace(float* x, int64_t n);
void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n);
}  // namespace avx512

}  // namespace fw::cpu
