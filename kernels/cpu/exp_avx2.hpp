// exp256: e^x on 8 floats with AVX2 + FMA, for the AVX2 kernels that need exp in their inner
// loop (softmax, silu, attention). Include only from *_avx2.cpp files: they alone are compiled
// with -mavx2 -mfma.
//
// Method: exp512's (exp_avx512.hpp): x = n ln2 + r, |r| <= ln2 / 2, the same degree-6
// polynomial for e^r. AVX2 has no vscalefps, so 2^n is applied as two exponent-field factors
// 2^(n/2) and 2^(n - n/2), each a normal float for every n the clamp allows; the second product
// rounds once into the subnormals, to 0 below them and to +inf above FLT_MAX.
// Accuracy: as exp512 (relative error about 1 ulp); exp256(0) == 1 exactly; -inf and x < -103.97
// give +0; x > ~88.73 and +inf give +inf; NaN stays NaN.
#pragma once

#if !defined(__AVX2__) || !defined(__FMA__)
#error "exp_avx2.hpp needs -mavx2 -mfma: include it only from *_avx2.cpp files"
#endif

#include <immintrin.h>

namespace fw::cpu::avx2 {

inline __m256 exp256(__m256 x) {
  // Clamp so n stays within [-159, 129] (both factors then normal); x is the second operand of
  // max / min, which they return when it is NaN, so NaN propagates through the polynomial.
  x = _mm256_max_ps(_mm256_set1_ps(-110.0f), x);
  x = _mm256_min_ps(_mm256_set1_ps(89.0f), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(0x1.715476p+0f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e430p-1f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-0x1.05c610p-29f), r);
  __m256 p = _mm256_set1_ps(0x1.6affaep-10f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.126f04p-7f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.555818p-5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.55540ap-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.fffffcp-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i half = _mm256_srai_epi32(ni, 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, half), bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

}  // namespace fw::cpu::avx2
