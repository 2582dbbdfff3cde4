#include "kernels/ref/fw_dot_ref.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/format/fw_formats.hpp"
#include "kernels/format/quant_ref.hpp"

namespace fw::cpu::ref {

void quantize_act_i8(const float* x, void* y, int64_t k, float fixed_scale) {
  const int64_t g = act_i8_group(k);
  auto* p = static_cast<uint8_t*>(y);
  auto* q = reinterpret_cast<int8_t*>(p + act_row_header);
  auto* scales = reinterpret_cast<float*>(p + act_row_header + k);
  float d_max = 0;
  for (int64_t b = 0; b < k / g; ++b) {
    float d = fixed_scale;
    if (!(d > 0)) {
      float amax = 0;
      for (int64_t i = b * g; i < (b + 1) * g; ++i) amax = std::max(amax, std::fabs(x[i]));
      d = amax / 127.f;
    }
    const float id = d > 0 ? 1.f / d : 0.f;
    for (int64_t i = b * g; i < (b + 1) * g; ++i)
      q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * id), -127.f, 127.f));
    scales[b] = d;
    d_max = std::max(d_max, d);
  }
  act_row_head h{d_max};
  std::memcpy(p, &h, sizeof h);
}

void quantize_act_i16(const float* x, void* y, int64_t k, float) {
  float amax = 0;
  for (int64_t i = 0; i < k; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 32767.f;
  const float id = d > 0 ? 1.f / d : 0.f;
  auto* p = static_cast<uint8_t*>(y);
  act_row_head h{d};
  std::memcpy(p, &h, sizeof h);
  auto* q = reinterpret_cast<int16_t*>(p + act_row_header);
  auto* sums = reinterpret_cast<int32_t*>(p + act_row_header + 2 * k);
  for (int64_t c = 0; c < k / 32; ++c) {
    int32_t s = 0;
    for (int i = 0; i < 32; ++i) {
      const int64_t j = c * 32 + i;
      q[j] = static_cast<int16_t>(std::clamp(std::nearbyint(x[j] * id), -32767.f, 32767.f));
      s += q[j];
    }
    sums[c] = s;
  }
}

float dot_w8a8(int64_t k, const void* w, const void* x) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  float dw;
  std::memcpy(&dw, wp, 4);
  const auto* qw = reinterpret_cast<const int8_t*>(wp + sizeof(w8_row_header));
  const auto* qx = reinterpret_cast<const int8_t*>(xp + act_row_header);
  const auto* scales = reinterpret_cast<const float*>(xp + act_row_header + k);
  const int64_t g = act_i8_group(k);
  float acc = 0;
  for (int64_t b = 0; b < k / g; ++b) {
    int32_t s = 0;
    for (int64_t i = b * g; i < (b + 1) * g; ++i) s += static_cast<int32_t>(qw[i]) * qx[i];
    acc = std::fma(scales[b], static_cast<float>(s), acc);
  }
  return acc * dw;
}

template <int G>
float dot_w4a16(int64_t k, const void* w, const void* x) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  float dx;
  std::memcpy(&dx, xp, 4);
  const auto* qx = reinterpret_cast<const int16_t*>(xp + act_row_header);
  const auto* sums = reinterpret_cast<const int32_t*>(xp + act_row_header + 2 * k);
  float acc = 0;
  for (int64_t g = 0; g < k / G; ++g) {
    const auto* h = reinterpret_cast<const w4_group_header*>(wp + g * w4_group_bytes(G));
    const uint8_t* qs = wp + g * w4_group_bytes(G) + sizeof(w4_group_header);
    const int16_t* xg = qx + g * G;
    int32_t isum = 0, xsum = 0;
    for (int c = 0; c < G / 32; ++c) {
      for (int j = 0; j < 16; ++j) {
        isum += static_cast<int32_t>(qs[c * 16 + j] & 0x0f) * xg[c * 32 + j];
        isum += static_cast<int32_t>(qs[c * 16 + j] >> 4) * xg[c * 32 + 16 + j];
      }
      xsum += sums[g * (G / 32) + c];
    }
    // One explicit fused step, so a compiler that contracts (or does not) cannot change the result.
    acc += std::fma(fp16_to_fp32(h->d), static_cast<float>(isum), fp16_to_fp32(h->m) * static_cast<float>(xsum));
  }
  return acc * dx;
}

template float dot_w4a16<32>(int64_t, const void*, const void*);
template float dot_w4a16<64>(int64_t, const void*, const void*);
template float dot_w4a16<128>(int64_t, const void*, const void*);

}  // namespace fw::cpu::ref
