// AVX2 attention: the AVX-512 kernel's method (attention_avx512.cpp) on 8-float vectors. Per tile
// of NQ queries, one pass over the keys in chunks of 8 with an online softmax (running max m,
// running sum l and, for the entropy, the running sum of p * s):
//   scores:  s[i] (8 keys in one vector) = sum over d of q_i[d] * Kt[d][8 keys]
//   update:  m' = max(m, max s), rescale acc and l by exp(m - m'), p = exp(s - m')
//   values:  acc[i] += p[i][t] * V[t] for the chunk's keys
// With 16 vector registers, a head of 64 floats is 8 accumulators: tiles are 1 query for head
// sizes of 64 and 128 and 2 for 32; each loaded key vector still serves every query of the tile.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/simd_avx2.hpp"

namespace fw::cpu::avx2 {
namespace {

// e^x on 8 floats: x = n ln2 + r, |r| <= ln2/2, a degree-6 polynomial for e^r (the AVX-512
// kernel's coefficients), 2^n by exponent arithmetic. x is clamped to [-87.3, 88.7] first, so
// very negative x gives ~1e-38 (not 0; below every probability that matters here) and NaN
// becomes a clamp bound only where it cannot occur (scores of finite inputs).
inline __m256 exp256(__m256 x) {
  x = _mm256_max_ps(_mm256_set1_ps(-87.3f), x);
  x = _mm256_min_ps(_mm256_set1_ps(88.7f), x);
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
  // 2^n: n in [-126, 128]; split in two factors so that n = 128 and n = -126 stay representable.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i half = _mm256_srai_epi32(ni, 1);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
  const __m256 s2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, half), _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

struct f32_elems {
  using elem = float;
  static __m256 load(const elem* p) { return _mm256_loadu_ps(p); }
};
struct f16_elems {
  using elem = uint16_t;
  static __m256 load(const elem* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
};

template <class E, int C, int NQ>
void query_tile(const kv_tiles& kv, const attention_queries& qs, int i0, float scale) {
  using elem = typename E::elem;
  constexpr int hd = 8 * C;
  const int bt = kv.block_tokens;
  __m256 acc[NQ][C];
  float m[NQ], l[NQ], e[NQ];
  int nk[NQ];
  const float* q[NQ];
  int max_n = 0;
  for (int i = 0; i < NQ; ++i) {
    for (int c = 0; c < C; ++c) acc[i][c] = _mm256_setzero_ps();
    m[i] = -INFINITY, l[i] = 0.f, e[i] = 0.f;
    nk[i] = qs.n_keys[i0 + i];
    q[i] = qs.q[i0 + i];
    max_n = std::max(max_n, nk[i]);
  }
  const bool want_entropy = qs.entropy != nullptr;
  const __m256 vscale = _mm256_set1_ps(scale);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 p[NQ];
  for (int base = 0; base < max_n; base += 8) {
    const elem* kt = static_cast<const elem*>(kv.k[base / bt]) + base % bt;
    const elem* vt = static_cast<const elem*>(kv.v[base / bt]) + static_cast<int64_t>(base % bt) * hd;
    __m256 s[NQ], s2[NQ];
    for (int i = 0; i < NQ; ++i) s[i] = _mm256_setzero_ps(), s2[i] = _mm256_setzero_ps();
    for (int d = 0; d < hd; d += 2) {
      const __m256 k0 = E::load(kt + static_cast<int64_t>(d) * bt);
      const __m256 k1 = E::load(kt + static_cast<int64_t>(d + 1) * bt);
      for (int i = 0; i < NQ; ++i) {
        s[i] = _mm256_fmadd_ps(_mm256_set1_ps(q[i][d]), k0, s[i]);
        s2[i] = _mm256_fmadd_ps(_mm256_set1_ps(q[i][d + 1]), k1, s2[i]);
      }
    }
    for (int i = 0; i < NQ; ++i) {
      const int visible = nk[i] - base;
      if (visible <= 0) {
        p[i] = _mm256_setzero_ps();
        continue;
      }
      const __m256 valid = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(visible), lanes));
      const __m256 si = _mm256_mul_ps(_mm256_add_ps(s[i], s2[i]), vscale);
      const float m_new = std::max(m[i], hmax(_mm256_blendv_ps(_mm256_set1_ps(-INFINITY), si, valid)));
      const __m256 vm = _mm256_set1_ps(m_new);
      const __m256 pi = _mm256_and_ps(valid, exp256(_mm256_sub_ps(si, vm)));
      const float p_sum = hsum(pi);
      const float ps_sum = want_entropy ? hsum(_mm256_and_ps(valid, _mm256_mul_ps(pi, si))) : 0.f;
      if (m_new != m[i]) {
        const float corr = m[i] == -INFINITY ? 0.f : _mm256_cvtss_f32(exp256(_mm256_set1_ps(m[i] - m_new)));
        const __m256 vc = _mm256_set1_ps(corr);
        l[i] *= corr, e[i] *= corr;
        for (int c = 0; c < C; ++c) acc[i][c] = _mm256_mul_ps(acc[i][c], vc);
        m[i] = m_new;
      }
      l[i] += p_sum, e[i] += ps_sum;
      p[i] = pi;
    }
    const int n_valid = std::min(8, max_n - base);
    for (int t = 0; t < n_valid; ++t) {
      const __m256i lane = _mm256_set1_epi32(t);
      __m256 pt[NQ];
      for (int i = 0; i < NQ; ++i) pt[i] = _mm256_permutevar8x32_ps(p[i], lane);
      for (int c = 0; c < C; ++c) {
        const __m256 v = E::load(vt + static_cast<int64_t>(t) * hd + 8 * c);
        for (int i = 0; i < NQ; ++i) acc[i][c] = _mm256_fmadd_ps(pt[i], v, acc[i][c]);
      }
    }
  }
  for (int i = 0; i < NQ; ++i) {
    const __m256 inv = _mm256_set1_ps(1.f / l[i]);
    for (int c = 0; c < C; ++c) _mm256_storeu_ps(qs.out[i0 + i] + 8 * c, _mm256_mul_ps(acc[i][c], inv));
    if (want_entropy) qs.entropy[i0 + i] = std::max(0.f, m[i] + std::log(l[i]) - e[i] / l[i]);
  }
}

template <class E, int C>
void attention_hd(const kv_tiles& kv, const attention_queries& qs, float scale) {
  constexpr int nq = C <= 4 ? 2 : 1;  // 8 accumulator registers per tile
  int i = 0;
  for (; i + nq <= qs.n_q; i += nq) query_tile<E, C, nq>(kv, qs, i, scale);
  if (i < qs.n_q) query_tile<E, C, 1>(kv, qs, i, scale);
}

}  // namespace

bool supports(int head_dim, int block_tokens) {
  return (head_dim == 32 || head_dim == 64 || head_dim == 96 || head_dim == 128) && block_tokens > 0 && block_tokens % 8 == 0;
}

void attention(const kv_tiles& kv, const attention_queries& qs, float scale) {
  switch (kv.head_dim) {
    case 32: kv.f16 ? attention_hd<f16_elems, 4>(kv, qs, scale) : attention_hd<f32_elems, 4>(kv, qs, scale); break;
    case 64: kv.f16 ? attention_hd<f16_elems, 8>(kv, qs, scale) : attention_hd<f32_elems, 8>(kv, qs, scale); break;
    case 96: kv.f16 ? attention_hd<f16_elems, 12>(kv, qs, scale) : attention_hd<f32_elems, 12>(kv, qs, scale); break;  // Phi-3
    case 128: kv.f16 ? attention_hd<f16_elems, 16>(kv, qs, scale) : attention_hd<f32_elems, 16>(kv, qs, scale); break;
    default: ref::attention(kv, qs, scale); break;
  }
}

}  // namespace fw::cpu::avx2
