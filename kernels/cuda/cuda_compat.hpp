// cuda_compat: what the CUDA kernels share with host code. FW_HD marks a function that nvcc
// compiles for both sides and a host compiler compiles as plain C++, so the per-element math of
// every kernel (block decoding, half conversion, softmax merging, KV tile addressing) is tested
// on the host against kernels/ref without a GPU (tests/kernels/cuda_math_test.cpp).
// Thread-safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define FW_HD __host__ __device__ __forceinline__
#else
#define FW_HD inline
#endif
#if defined(__CUDA_ARCH__)  // nvcc's device pass (its host pass and g++ do not know the pragma)
#define FW_UNROLL _Pragma("unroll")
#else
#define FW_UNROLL
#endif

namespace fw::cuda {

/// IEEE half (bits) -> float, exact for every value including subnormals, infinities and NaN.
FW_HD float half_to_float(uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      exp = 127 - 15 + 1;
      while ((man & 0x400u) == 0) {
        man <<= 1;
        --exp;
      }
      man &= 0x3ffu;
      bits = sign | (exp << 23) | (man << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

/// float -> IEEE half bits, round to nearest even (a KV row stored in an f16 cache).
FW_HD uint16_t float_to_half(float f) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(f));
#else
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past the largest half
  if (abs < 0x38800000u) {  // subnormal half (or zero)
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14 - (e - 127) + 13 - 1 ... places the value in 10 bits
    const uint32_t lost = m & ((1u << shift) - 1u), half_way = 1u << (shift - 1);
    uint32_t r = m >> shift;
    if (lost > half_way || (lost == half_way && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = ((abs >> 13) - ((127u - 15u) << 10));
  const uint32_t lost = abs & 0x1fffu;
  if (lost > 0x1000u || (lost == 0x1000u && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
#endif
}

/// bfloat16 (bits) -> float.
FW_HD float bf16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
#if defined(__CUDA_ARCH__)
  f = __uint_as_float(bits);
#else
  std::memcpy(&f, &bits, sizeof f);
#endif
  return f;
}

/// v rounded to the nearest integer (ties to even, the default rounding) and clamped to
/// [-limit, limit]: the activation quantizers' step (kernels/ref: nearbyint, then clamp).
FW_HD int round_clamp(float v, int limit) {
#if defined(__CUDA_ARCH__)
  const int q = __float2int_rn(v);
#else
  const float r = std::nearbyint(v);
  const int q = r >= 2147483520.f ? 2147483647 : r <= -2147483648.f ? -2147483647 : static_cast<int>(r);
#endif
  return q < -limit ? -limit : q > limit ? limit : q;
}

/// Little-endian u16 at p (any alignment).
FW_HD uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
/// Little-endian float at p (4-byte aligned on the device).
FW_HD float load_f32(const uint8_t* p) {
  float f;
#if defined(__CUDA_ARCH__)
  f = *reinterpret_cast<const float*>(p);
#else
  std::memcpy(&f, p, sizeof f);
#endif
  return f;
}

}  // namespace fw::cuda
