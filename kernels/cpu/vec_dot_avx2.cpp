// AVX2 + FMA + F16C kernels (compiled with -mavx2 -mfma -mf16c; selected only when CPUID has them).
#include <immintrin.h>

#include "kernels/cpu/vec_dot.hpp"

namespace fw::cpu::avx2 {
namespace {

inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

inline float fp16(uint16_t h) { return _cvtsh_ss(h); }

// Products of 32 unsigned bytes with 32 signed bytes, summed per 4 into 8 int32 lanes, as floats.
inline __m256 mul_sum_us8(__m256i u, __m256i s) {
  const __m256i p16 = _mm256_maddubs_epi16(u, s);
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

inline __m256i unpack_nibbles(const uint8_t* qs) {
  const __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(tmp, 4), tmp);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

}  // namespace

void quantize_q8x(const float* x, block_q8x* y, int64_t k) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < k / 32; ++b, x += 32) {
    __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    __m256 m = _mm256_andnot_ps(sign_mask, v0);
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign_mask, v1));
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign_mask, v2));
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign_mask, v3));
    const float d = _cvtsh_ss(_cvtss_sh(hmax(m) / 127.f, 0));
    const __m256 id = _mm256_set1_ps(d != 0.f ? 1.f / d : 0.f);
    __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, id));
    __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, id));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, id));
    __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, id));
    // Clamp to [-127, 127] like the reference before summing: when d is an fp16 subnormal its
    // rounding error can push x / d past 127.
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    i0 = _mm256_min_epi32(_mm256_max_epi32(i0, lo), hi);
    i1 = _mm256_min_epi32(_mm256_max_epi32(i1, lo), hi);
    i2 = _mm256_min_epi32(_mm256_max_epi32(i2, lo), hi);
    i3 = _mm256_min_epi32(_mm256_max_epi32(i3, lo), hi);
    y[b].d = d;
    y[b].sum = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3)));
    i0 = _mm256_packs_epi32(i0, i1);
    i2 = _mm256_packs_epi32(i2, i3);
    i0 = _mm256_packs_epi16(i0, i2);
    i0 = _mm256_permutevar8x32_epi32(i0, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs), i0);
  }
}

float dot_f32(int64_t k, const void* w, const void* x) {
  const float* a = static_cast<const float*>(w);
  const float* b = static_cast<const float*>(x);
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
  }
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; i < k; ++i) s += a[i] * b[i];
  return s;
}

float dot_f16(int64_t k, const void* w, const void* x) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const float* b = static_cast<const float*>(x);
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i + 8)));
    s0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(b + i + 8), s1);
  }
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; i < k; ++i) s += fp16(a[i]) * b[i];
  return s;
}

float dot_bf16(int64_t k, const void* w, const void* x) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const float* b = static_cast<const float*>(x);
  __m256 s0 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 wv = _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
    s0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(b + i), s0);
  }
  float s = hsum(s0);
  for (; i < k; ++i) {
    uint32_t bits = static_cast<uint32_t>(a[i]) << 16;
    float f;
    __builtin_memcpy(&f, &bits, 4);
    s += f * b[i];
  }
  return s;
}

float dot_q4_0(int64_t k, const void* w, const void* x) {
  const auto* wb = static_cast<const block_q4_0*>(w);
  const auto* xb = static_cast<const block_q8x*>(x);
  __m256 acc = _mm256_setzero_ps();
  float corr = 0.f;
  for (int64_t b = 0; b < k / 32; ++b) {
    const float d = fp16(wb[b].d) * xb[b].d;
    const __m256i q = unpack_nibbles(wb[b].qs);
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[b].qs));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), mul_sum_us8(q, a), acc);
    corr -= 8.f * d * static_cast<float>(xb[b].sum);
  }
  return hsum(acc) + corr;
}

float dot_q4_1(int64_t k, const void* w, const void* x) {
  const auto* wb = static_cast<const block_q4_1*>(w);
  const auto* xb = static_cast<const block_q8x*>(x);
  __m256 acc = _mm256_setzero_ps();
  float mins = 0.f;
  for (int64_t b = 0; b < k / 32; ++b) {
    const float d = fp16(wb[b].d) * xb[b].d;
    const __m256i q = unpack_nibbles(wb[b].qs);
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[b].qs));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), mul_sum_us8(q, a), acc);
    mins += fp16(wb[b].m) * xb[b].d * static_cast<float>(xb[b].sum);
  }
  return hsum(acc) + mins;
}

float dot_q8_0(int64_t k, const void* w, const void* x) {
  const auto* wb = static_cast<const block_q8_0*>(w);
  const auto* xb = static_cast<const block_q8x*>(x);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < k / 32; ++b) {
    const float d = fp16(wb[b].d) * xb[b].d;
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[b].qs));
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[b].qs));
    const __m256i ua = _mm256_sign_epi8(q, q);
    const __m256i sa = _mm256_sign_epi8(a, q);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), mul_sum_us8(ua, sa), acc);
  }
  return hsum(acc);
}

}  // namespace fw::cpu::avx2
