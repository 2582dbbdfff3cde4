// The scalar reference ops, the shared rope table, and the run-time choice of path.
#include "kernels/cpu/ops.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_features.hpp"
#include "kernels/format/quant_ref.hpp"

namespace fw::cpu {

void rope_cos_sin(int n_rot, int pos, float freq_base, float freq_scale, float* cos_sin,
                  const float* freq_factors) {
  // Same float arithmetic as ref::rope_norm (repeated multiplication, not pow per pair), so the
  // angles, and therefore cos / sin, are the reference's bit for bit.
  const float theta_scale = std::pow(freq_base, -2.0f / static_cast<float>(n_rot));
  float theta = static_cast<float>(pos) * freq_scale;
  for (int i = 0; i < n_rot; i += 2) {
    const float t = freq_factors ? theta / freq_factors[i / 2] : theta;
    cos_sin[i] = std::cos(t);
    cos_sin[i + 1] = std::sin(t);
    theta *= theta_scale;
  }
}

void rope_apply(float* x, int n_head, int head_dim, int n_rot, const float* cs, bool neox) {
  const int half = n_rot / 2;
  for (int h = 0; h < n_head; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    for (int i = 0; i < n_rot; i += 2) {
      const float c = cs[i], s = cs[i + 1];
      float* a = neox ? v + i / 2 : v + i;
      float* b = neox ? v + i / 2 + half : v + i + 1;
      const float x0 = *a, x1 = *b;
      *a = x0 * c - x1 * s;
      *b = x0 * s + x1 * c;
    }
  }
}

namespace ref {

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = 1.0f / std::sqrt(static_cast<float>(ss / n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
}

void rope_norm(float* x, int n_head, int head_dim, int n_rot, int pos, float freq_base,
               float freq_scale) {
  const float theta_scale = std::pow(freq_base, -2.0f / static_cast<float>(n_rot));
  for (int h = 0; h < n_head; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    float theta = static_cast<float>(pos) * freq_scale;
    for (int i = 0; i < n_rot; i += 2) {
      const float c = std::cos(theta), s = std::sin(theta);
      const float a = v[i], b = v[i + 1];
      v[i] = a * c - b * s;
      v[i + 1] = a * s + b * c;
      theta *= theta_scale;
    }
  }
}

void rope_neox(float* x, int n_head, int head_dim, int n_rot, int pos, float freq_base,
               float freq_scale) {
  const float theta_scale = std::pow(freq_base, -2.0f / static_cast<float>(n_rot));
  const int half = n_rot / 2;
  for (int h = 0; h < n_head; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    float theta = static_cast<float>(pos) * freq_scale;
    for (int i = 0; i < half; ++i) {
      const float c = std::cos(theta), s = std::sin(theta);
      const float a = v[i], b = v[i + half];
      v[i] = a * c - b * s;
      v[i + half] = a * s + b * c;
      theta *= theta_scale;
    }
  }
}

void silu_mul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void softmax(float* x, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fw::fp32_to_fp16(x[i]);
}

}  // namespace ref

namespace {

// Scalar hosts still get the cheap part of the rope speed-up: cos / sin once per call instead of
// once per head. Same table, same products as the reference, so the same bits.
void rope_norm_table(float* x, int n_head, int head_dim, int n_rot, int pos, float freq_base,
                     float freq_scale) {
  const rope_table table(n_rot, pos, freq_base, freq_scale);
  const float* cs = table.data();
  for (int h = 0; h < n_head; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    for (int i = 0; i < n_rot; i += 2) {
      const float c = cs[i], s = cs[i + 1];
      const float a = v[i], b = v[i + 1];
      v[i] = a * c - b * s;
      v[i + 1] = a * s + b * c;
    }
  }
}

struct op_paths {
  decltype(&ref::rms_norm) rms_norm;
  decltype(&ref::rope_norm) rope_norm;
  decltype(&ref::silu_mul) silu_mul;
  decltype(&ref::softmax) softmax;
  decltype(&ref::add_inplace) add_inplace;
  decltype(&ref::fp32_to_fp16_row) fp32_to_fp16_row;
};

op_paths pick() {
  // best_simd_level() honours FW_SIMD; has_avx512() guards against a cap above what the host has.
  if (best_simd_level() >= simd_level::avx512 && host_features().has_avx512())
    return {avx512::rms_norm, avx512::rope_norm, avx512::silu_mul, avx512::softmax,
            avx512::add_inplace, avx512::fp32_to_fp16_row};
  if (best_simd_level() >= simd_level::avx2 && host_features().has_avx2())
    return {avx2::rms_norm, rope_norm_table, avx2::silu_mul, avx2::softmax, avx2::add_inplace, avx2::fp32_to_fp16_row};
  return {ref::rms_norm, rope_norm_table, ref::silu_mul, ref::softmax, ref::add_inplace, ref::fp32_to_fp16_row};
}

// Chosen once: the ops run per token and per layer, CPUID and getenv must not.
const op_paths& paths() {
  static const op_paths p = pick();
  return p;
}

}  // namespace

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  paths().rms_norm(x, w, y, n, eps);
}

void rope_norm(float* x, int n_head, int head_dim, int n_rot, int pos, float freq_base,
               float freq_scale) {
  paths().rope_norm(x, n_head, head_dim, n_rot, pos, freq_base, freq_scale);
}

void silu_mul(float* gate, const float* up, int64_t n) { paths().silu_mul(gate, up, n); }

void softmax(float* x, int64_t n) { paths().softmax(x, n); }

void add_inplace(float* y, const float* x, int64_t n) { paths().add_inplace(y, x, n); }
void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n) { paths().fp32_to_fp16_row(x, y, n); }

}  // namespace fw::cpu
