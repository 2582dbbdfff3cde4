#include "kernels/format/fw_formats.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/format/quant_ref.hpp"

namespace fw::fw_format {

void quantize_w8_row(const float* x, void* dst, int64_t k, float clip) {
  float amax = 0;
  for (int64_t i = 0; i < k; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax * clip / 127.f;
  const float id = d > 0 ? 1.f / d : 0.f;
  auto* p = static_cast<uint8_t*>(dst);
  std::memset(p, 0, sizeof(w8_row_header));
  std::memcpy(p, &d, sizeof d);
  auto* q = reinterpret_cast<int8_t*>(p + sizeof(w8_row_header));
  for (int64_t i = 0; i < k; ++i)
    q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * id), -127.f, 127.f));
}

void dequantize_w8_row(const void* src, float* y, int64_t k) {
  const auto* p = static_cast<const uint8_t*>(src);
  float d;
  std::memcpy(&d, p, sizeof d);
  const auto* q = reinterpret_cast<const int8_t*>(p + sizeof(w8_row_header));
  for (int64_t i = 0; i < k; ++i) y[i] = d * static_cast<float>(q[i]);
}

void quantize_w4_group(const float* x, int g, void* dst, float clip) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < g; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  if (clip < 1.f) {
    const float mid = 0.5f * (lo + hi), half = 0.5f * (hi - lo) * clip;
    lo = mid - half, hi = mid + half;
  }
  // The zero point is an integer (the grid contains 0 exactly when lo <= 0 <= hi); the scale
  // and offset are stored as fp16 and the rounding below uses the stored values.
  float d = (hi - lo) / 15.f;
  auto* h = static_cast<w4_group_header*>(dst);
  auto* qs = static_cast<uint8_t*>(dst) + sizeof(w4_group_header);
  if (!(d > 0)) {
    h->d = 0;
    h->m = fp32_to_fp16(lo);
    std::memset(qs, 0, static_cast<size_t>(g) / 2);
    return;
  }
  const float zero = std::clamp(std::nearbyint(-lo / d), 0.f, 15.f);
  h->d = fp32_to_fp16(d);
  d = fp16_to_fp32(h->d);
  h->m = fp32_to_fp16(-d * zero);
  const float m = fp16_to_fp32(h->m);
  const float id = d > 0 ? 1.f / d : 0.f;
  for (int c = 0; c < g / 32; ++c) {
    for (int j = 0; j < 16; ++j) {
      const float a = x[c * 32 + j], b = x[c * 32 + 16 + j];
      const int qa = static_cast<int>(std::clamp(std::nearbyint((a - m) * id), 0.f, 15.f));
      const int qb = static_cast<int>(std::clamp(std::nearbyint((b - m) * id), 0.f, 15.f));
      qs[c * 16 + j] = static_cast<uint8_t>(qa | (qb << 4));
    }
  }
}

void requantize_w4_group(const float* x, int g, float d, float m, void* dst) {
  auto* h = static_cast<w4_group_header*>(dst);
  auto* qs = static_cast<uint8_t*>(dst) + sizeof(w4_group_header);
  h->d = fp32_to_fp16(d);
  h->m = fp32_to_fp16(m);
  const float ds = fp16_to_fp32(h->d), ms = fp16_to_fp32(h->m);
  const float id = ds > 0 ? 1.f / ds : 0.f;
  for (int c = 0; c < g / 32; ++c)
    for (int j = 0; j < 16; ++j) {
      const int qa = static_cast<int>(std::clamp(std::nearbyint((x[c * 32 + j] - ms) * id), 0.f, 15.f));
      const int qb = static_cast<int>(std::clamp(std::nearbyint((x[c * 32 + 16 + j] - ms) * id), 0.f, 15.f));
      qs[c * 16 + j] = static_cast<uint8_t>(qa | (qb << 4));
    }
}

void dequantize_w4_group(const void* src, int g, float* y) {
  const auto* h = static_cast<const w4_group_header*>(src);
  const auto* qs = static_cast<const uint8_t*>(src) + sizeof(w4_group_header);
  const float d = fp16_to_fp32(h->d), m = fp16_to_fp32(h->m);
  for (int c = 0; c < g / 32; ++c)
    for (int j = 0; j < 16; ++j) {
      y[c * 32 + j] = d * static_cast<float>(qs[c * 16 + j] & 0x0f) + m;
      y[c * 32 + 16 + j] = d * static_cast<float>(qs[c * 16 + j] >> 4) + m;
    }
}

template <int G>
void w4_to_float(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / G; ++i) dequantize_w4_group(p + i * w4_group_bytes(G), G, dst + i * G);
}

template <int G>
void w4_from_float(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / G; ++i) quantize_w4_group(src + i * G, G, p + i * w4_group_bytes(G));
}

template void w4_to_float<32>(const void*, float*, int64_t);
template void w4_to_float<64>(const void*, float*, int64_t);
template void w4_to_float<128>(const void*, float*, int64_t);
template void w4_from_float<32>(const float*, void*, int64_t);
template void w4_from_float<64>(const float*, void*, int64_t);
template void w4_from_float<128>(const float*, void*, int64_t);

}  // namespace fw::fw_format
