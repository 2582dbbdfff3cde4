// Scalar reference kernels: the definition every SIMD path is tested against.
#include <algorithm>
#include <cmath>

#include "kernels/format/quant_ref.hpp"
#include "kernels/ref/vec_dot_ref.hpp"

namespace fw::cpu::ref {

void quantize_q8x(const float* x, block_q8x* y, int64_t k) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32) {
    float amax = 0.f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    // The scale is rounded to fp16 like llama.cpp's q8_0/q8_1 activation blocks.
    const float d = fp16_to_fp32(fp32_to_fp16(amax / 127.f));
    const float id = d != 0.f ? 1.f / d : 0.f;
    int32_t sum = 0;
    for (int i = 0; i < 32; ++i) {
      const int q = static_cast<int>(std::nearbyint(x[i] * id));
      y[b].qs[i] = static_cast<int8_t>(std::max(-127, std::min(127, q)));
      sum += y[b].qs[i];
    }
    y[b].d = d;
    y[b].sum = sum;
  }
}

float dot_f32(int64_t k, const void* w, const void* x) {
  const float* a = static_cast<const float*>(w);
  const float* b = static_cast<const float*>(x);
  double s = 0;
  for (int64_t i = 0; i < k; ++i) s += static_cast<double>(a[i]) * b[i];
  return static_cast<float>(s);
}

float dot_f16(int64_t k, const void* w, const void* x) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const float* b = static_cast<const float*>(x);
  double s = 0;
  for (int64_t i = 0; i < k; ++i) s += static_cast<double>(fp16_to_fp32(a[i])) * b[i];
  return static_cast<float>(s);
}

float dot_bf16(int64_t k, const void* w, const void* x) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const float* b = static_cast<const float*>(x);
  double s = 0;
  for (int64_t i = 0; i < k; ++i) s += static_cast<double>(bf16_to_fp32(a[i])) * b[i];
  return static_cast<float>(s);
}

float dot_q4_0(int64_t k, const void* w, const void* x) {
  const auto* wb = static_cast<const block_q4_0*>(w);
  const auto* xb = static_cast<const block_q8x*>(x);
  float s = 0.f;
  for (int64_t b = 0; b < k / 32; ++b) {
    int32_t acc = 0;
    for (int j = 0; j < 16; ++j) {
      acc += ((wb[b].qs[j] & 0x0f) - 8) * xb[b].qs[j];
      acc += ((wb[b].qs[j] >> 4) - 8) * xb[b].qs[j + 16];
    }
    s += fp16_to_fp32(wb[b].d) * xb[b].d * static_cast<float>(acc);
  }
  return s;
}

float dot_q4_1(int64_t k, const void* w, const void* x) {
  const auto* wb = static_cast<const block_q4_1*>(w);
  const auto* xb = static_cast<const block_q8x*>(x);
  float s = 0.f;
  for (int64_t b = 0; b < k / 32; ++b) {
    int32_t acc = 0;
    for (int j = 0; j < 16; ++j) {
      acc += (wb[b].qs[j] & 0x0f) * xb[b].qs[j];
      acc += (wb[b].qs[j] >> 4) * xb[b].qs[j + 16];
    }
    s += fp16_to_fp32(wb[b].d) * xb[b].d * static_cast<float>(acc) +
         fp16_to_fp32(wb[b].m) * xb[b].d * static_cast<float>(xb[b].sum);
  }
  return s;
}

float dot_q8_0(int64_t k, const void* w, const void* x) {
  const auto* wb = static_cast<const block_q8_0*>(w);
  const auto* xb = static_cast<const block_q8x*>(x);
  float s = 0.f;
  for (int64_t b = 0; b < k / 32; ++b) {
    int32_t acc = 0;
    for (int j = 0; j < 32; ++j) acc += wb[b].qs[j] * xb[b].qs[j];
    s += fp16_to_fp32(wb[b].d) * xb[b].d * static_cast<float>(acc);
  }
  return s;
}

}  // namespace fw::cpu::ref
