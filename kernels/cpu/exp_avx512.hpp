// exp512: e^x on 16 floats with AVX-512F, for kernels that need exp in their inner loop (softmax,
// silu, attention). Include only from *_avx512.cpp files: they alone are compiled with -mavx512*.
//
// Method: x = n ln2 + r with n = round(x / ln2) and |r| <= ln2 / 2; e^r comes from a degree-6
// polynomial and 2^n is applied by vscalefps, which rounds into the subnormals and gives 0 / +inf
// past the float range on its own (no exponent-field arithmetic to overflow).
// Accuracy: relative error below 1e-7 (about 1 ulp) for x in the float range; exp512(0) == 1
// exactly; -inf and very negative x give +0; x > ~88.73 and +inf give +inf; NaN stays NaN.
#pragma once

#if !defined(__AVX512F__) || !defined(__FMA__)
#error "exp_avx512.hpp needs -mavx512f -mfma: include it only from *_avx512.cpp files"
#endif

#include <immintrin.h>

namespace fw::cpu::avx512 {

inline __m512 exp512(__m512 x) {
  // Clamp first so n stays a small integer: e^-104 is below the smallest subnormal (so scalef
  // gives 0) and e^89 is past FLT_MAX (scalef gives +inf). x is the second operand of max/min,
  // which those instructions return when it is NaN, so NaN propagates.
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);

  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(0x1.715476p+0f)),  // 1/ln2
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // r = x - n ln2 with ln2 split in two floats: the FMAs keep n * ln2_hi exact, so r loses
  // nothing to cancellation.
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e430p-1f), x);  // ln2_hi
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-0x1.05c610p-29f), r);       // ln2_lo

  // e^r ~= 1 + r (c1 + r (c2 + ... + r c6)): relative-error minimax fit on [-ln2/2, ln2/2]
  // (Lawson iterations, float coefficients; max error 2.2e-9 before float rounding). The
  // constant term is exactly 1 so that e^0 == 1.
  __m512 p = _mm512_set1_ps(0x1.6affaep-10f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.126f04p-7f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.555818p-5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.55540ap-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.fffffcp-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

}  // namespace fw::cpu::avx512
