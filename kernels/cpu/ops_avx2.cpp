// AVX2 + FMA + F16C element-wise ops (compiled with -mavx2 -mfma -mf16c; selected only when CPUID
// has them): ops_avx512.cpp's methods on 8 floats. AVX2 has no masked loads of the kind AVX-512
// has for every op, so the last n % 8 values go through an 8-lane scratch copy (padded with a
// neutral value) and the same vector code: nothing is read or written past the end. Reductions
// keep several vector accumulators, so they sum in another order than the scalar reference
// (differences are float rounding, tested).
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "kernels/cpu/exp_avx2.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/simd_avx2.hpp"

namespace fw::cpu::avx2 {
namespace {

// The tail [i, n) (fewer than 8 values) of a row, padded with `pad`.
inline __m256 load_tail(const float* p, int64_t rem, float pad) {
  float buf[8];
  for (int k = 0; k < 8; ++k) buf[k] = pad;
  std::memcpy(buf, p, static_cast<size_t>(rem) * sizeof(float));
  return _mm256_loadu_ps(buf);
}
inline void store_tail(float* p, int64_t rem, __m256 v) {
  float buf[8];
  _mm256_storeu_ps(buf, v);
  std::memcpy(p, buf, static_cast<size_t>(rem) * sizeof(float));
}

// f(x lanes, y lanes) -> y over [0, n): y[i] = f(x[i], y[i]), 8 lanes at a time.
template <class F>
inline void map2(const float* x, float* y, int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  if (i < n) store_tail(y + i, n - i, f(load_tail(x + i, n - i, 0.f), load_tail(y + i, n - i, 0.f)));
}

}  // namespace

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    const __m256 v2 = _mm256_loadu_ps(x + i + 16), v3 = _mm256_loadu_ps(x + i + 24);
    a0 = _mm256_fmadd_ps(v0, v0, a0);
    a1 = _mm256_fmadd_ps(v1, v1, a1);
    a2 = _mm256_fmadd_ps(v2, v2, a2);
    a3 = _mm256_fmadd_ps(v3, v3, a3);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    a0 = _mm256_fmadd_ps(v, v, a0);
  }
  if (i < n) {
    const __m256 v = load_tail(x + i, n - i, 0.f);
    a1 = _mm256_fmadd_ps(v, v, a1);
  }
  const float ss = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  // The scale as the reference computes it (mean in double, then float).
  const float scale = 1.0f / std::sqrt(static_cast<float>(static_cast<double>(ss) / n) + eps);
  const __m256 s = _mm256_set1_ps(scale);
  // (x * scale) * w, the reference's order; y may alias x (each lane read before it is written).
  i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), s), _mm256_loadu_ps(w + i)));
  if (i < n) {
    const __m256 v = _mm256_mul_ps(load_tail(x + i, n - i, 0.f), s);
    store_tail(y + i, n - i, _mm256_mul_ps(v, load_tail(w + i, n - i, 0.f)));
  }
}

void silu_mul(float* gate, const float* up, int64_t n) {
  // silu(g) = g / (1 + e^-g); for g < -88.7, e^-g = +inf and the quotient is -0, as in the
  // reference.
  map2(up, gate, n, [](__m256 u, __m256 g) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), g));
    return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
  });
}

void softmax(float* x, int64_t n) {
  // Pass 1: the max. Tail padding is -inf so it never wins.
  const __m256 neg_inf = _mm256_set1_ps(-INFINITY);
  __m256 m0 = neg_inf, m1 = neg_inf;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
    m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + i + 8));
  }
  for (; i + 8 <= n; i += 8) m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
  if (i < n) m1 = _mm256_max_ps(m1, load_tail(x + i, n - i, -INFINITY));
  const __m256 mx = _mm256_set1_ps(hmax(_mm256_max_ps(m0, m1)));

  // Pass 2: e^(x - max), stored, and summed. -inf entries (and the -inf padding) give exactly 0.
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  for (i = 0; i + 16 <= n; i += 16) {
    const __m256 e0 = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), mx));
    const __m256 e1 = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), mx));
    _mm256_storeu_ps(x + i, e0);
    _mm256_storeu_ps(x + i + 8, e1);
    s0 = _mm256_add_ps(s0, e0);
    s1 = _mm256_add_ps(s1, e1);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), mx));
    _mm256_storeu_ps(x + i, e);
    s0 = _mm256_add_ps(s0, e);
  }
  if (i < n) {
    const __m256 e = exp256(_mm256_sub_ps(load_tail(x + i, n - i, -INFINITY), mx));
    store_tail(x + i, n - i, e);
    s1 = _mm256_add_ps(s1, e);
  }
  const double sum = hsum(_mm256_add_ps(s0, s1));

  // Pass 3: normalize, with the reference's 1 / sum in double.
  const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / sum));
  map2(x, x, n, [&](__m256 v, __m256) { return _mm256_mul_ps(v, inv); });
}

void add_inplace(float* y, const float* x, int64_t n) {
  map2(x, y, n, [](__m256 a, __m256 b) { return _mm256_add_ps(b, a); });
}

void exp_inplace(float* x, int64_t n) {
  map2(x, x, n, [](__m256 v, __m256) { return exp256(v); });
}

void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  if (i < n) {
    uint16_t buf[8];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(buf), _mm256_cvtps_ph(load_tail(x + i, n - i, 0.f), _MM_FROUND_TO_NEAREST_INT));
    std::memcpy(y + i, buf, static_cast<size_t>(n - i) * sizeof(uint16_t));
  }
}

}  // namespace fw::cpu::avx2
