#include "kernels/cpu/ops.hpp"

#include <cmath>

namespace fw::cpu {

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

}  // namespace fw::cpu
