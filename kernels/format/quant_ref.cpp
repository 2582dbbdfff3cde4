#include "kernels/format/quant_ref.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace fw {

// -- scalar conversions --

float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return (h & 0x8000) ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t fp32_to_fp16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u)  // NaN: keep the top payload bits, force quiet so it stays NaN
    return sign | 0x7e00 | static_cast<uint16_t>((x >> 13) & 0x1ff);
  if (x >= 0x47800000u) return sign | 0x7c00;  // >= 65536 (or inf): infinity
  if (x < 0x38800000u) {                        // below 2^-14: half subnormal (or zero)
    if (x < 0x33000000u) return sign;           // below 2^-25: rounds to zero
    const uint32_t e = x >> 23;
    const uint32_t m = (x & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return sign | static_cast<uint16_t>(r);
  }
  // Normal: rebias exponent, round the 13 dropped mantissa bits; a carry may reach infinity.
  uint32_t h = (((x >> 23) - 112) << 10) | ((x >> 13) & 0x3ff);
  const uint32_t rem = x & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return sign | static_cast<uint16_t>(h);
}

float bf16_to_fp32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

uint16_t fp32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

// -- block formats --

namespace {

void quantize_q8_0(const float* x, block_q8_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += qk8_0) {
    float amax = 0.0f;
    for (int j = 0; j < qk8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < qk8_0; ++j) y[i].qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
  }
}

void quantize_q4_0(const float* x, block_q4_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += qk4_0) {
    float amax = 0.0f;
    float max = 0.0f;  // the value of largest magnitude, with its sign
    for (int j = 0; j < qk4_0; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < qk4_0 / 2; ++j) {
      const int8_t lo = std::min<int8_t>(15, static_cast<int8_t>(x[j] * id + 8.5f));
      const int8_t hi = std::min<int8_t>(15, static_cast<int8_t>(x[j + qk4_0 / 2] * id + 8.5f));
      y[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_q4_1(const float* x, block_q4_1* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += qk4_1) {
    float min = FLT_MAX;
    float max = -FLT_MAX;
    for (int j = 0; j < qk4_1; ++j) {
      min = std::min(min, x[j]);
      max = std::max(max, x[j]);
    }
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    for (int j = 0; j < qk4_1 / 2; ++j) {
      const int8_t lo = std::min<int8_t>(15, static_cast<int8_t>((x[j] - min) * id + 0.5f));
      const int8_t hi =
          std::min<int8_t>(15, static_cast<int8_t>((x[j + qk4_1 / 2] - min) * id + 0.5f));
      y[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void dequantize_q8_0(const block_q8_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += qk8_0) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < qk8_0; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

void dequantize_q4_0(const block_q4_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += qk4_0) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < qk4_0 / 2; ++j) {
      y[j] = static_cast<float>((x[i].qs[j] & 0x0f) - 8) * d;
      y[j + qk4_0 / 2] = static_cast<float>((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_1(const block_q4_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += qk4_1) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    for (int j = 0; j < qk4_1 / 2; ++j) {
      y[j] = static_cast<float>(x[i].qs[j] & 0x0f) * d + m;
      y[j + qk4_1 / 2] = static_cast<float>(x[i].qs[j] >> 4) * d + m;
    }
  }
}


}  // namespace

namespace format_ref {

// -- per-type row converters (the traits table's to_float / from_float) --

void f32_to_float(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); }
void f32_from_float(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); }
void f16_to_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(s[i]);
}
void f16_from_float(const float* src, void* dst, int64_t n) {
  auto* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_fp16(src[i]);
}
void bf16_to_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(s[i]);
}
void bf16_from_float(const float* src, void* dst, int64_t n) {
  auto* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_bf16(src[i]);
}
void q4_0_to_float(const void* src, float* dst, int64_t n) { dequantize_q4_0(static_cast<const block_q4_0*>(src), dst, n / qk4_0); }
void q4_0_from_float(const float* src, void* dst, int64_t n) { quantize_q4_0(src, static_cast<block_q4_0*>(dst), n / qk4_0); }
void q4_1_to_float(const void* src, float* dst, int64_t n) { dequantize_q4_1(static_cast<const block_q4_1*>(src), dst, n / qk4_1); }
void q4_1_from_float(const float* src, void* dst, int64_t n) { quantize_q4_1(src, static_cast<block_q4_1*>(dst), n / qk4_1); }
void q8_0_to_float(const void* src, float* dst, int64_t n) { dequantize_q8_0(static_cast<const block_q8_0*>(src), dst, n / qk8_0); }
void q8_0_from_float(const float* src, void* dst, int64_t n) { quantize_q8_0(src, static_cast<block_q8_0*>(dst), n / qk8_0); }

}  // namespace format_ref

void dequantize_row_ref(ggml_type t, const void* src, float* dst, int64_t n) {
  const auto tr = type_traits(t);
  assert(n % tr.block_size == 0 && tr.to_float);
  tr.to_float(src, dst, n);
}

void quantize_row_ref(ggml_type t, const float* src, void* dst, int64_t n) {
  const auto tr = type_traits(t);
  assert(n % tr.block_size == 0 && tr.from_float);
  tr.from_float(src, dst, n);
}

}  // namespace fw
