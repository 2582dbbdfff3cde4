// AVX-512 attention: per tile of NQ queries, one pass over the keys in chunks of 16 with an online
// softmax (running max m, running sum l, and for the entropy the running sum of p * s):
//   scores:  s[i] (16 keys in one vector) = sum over d of q_i[d] * Kt[d][16 keys]
//   update:  m' = max(m, max s), rescale acc and l by exp(m - m'), p = exp(s - m')
//   values:  acc[i] += p[i][t] * V[t] for the chunk's keys
// Each loaded key or value vector serves all NQ queries of the tile.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 AVX-512 header false positive
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/exp_avx512.hpp"
#include "kernels/format/kv_q8.hpp"

namespace fw::cpu::avx512 {
namespace {

// Loads 16 consecutive elements of a tile as floats.
struct f32_elems {
  using elem = float;
  static __m512 load(const elem* p) { return _mm512_loadu_ps(p); }
};
struct f16_elems {
  using elem = uint16_t;
  static __m512 load(const elem* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
};
// int8 with a scale per token after the tile's elements (kernels/format/kv_q8.hpp).
struct q8_elems {
  using elem = int8_t;
  static __m512 load(const elem* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
};
template <class E>
constexpr bool is_scaled = std::is_same_v<E, q8_elems>;

template <class E, int C, int NQ>
void query_tile(const kv_tiles& kv, const attention_queries& qs, int i0, float scale) {
  using elem = typename E::elem;
  constexpr int hd = 16 * C;
  const int bt = kv.block_tokens;
  __m512 acc[NQ][C];
  float m[NQ], l[NQ], e[NQ];
  int nk[NQ];
  const float* q[NQ];
  int max_n = 0;
#pragma GCC unroll 16
  for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[i][c] = _mm512_setzero_ps();
    m[i] = -INFINITY, l[i] = 0.f, e[i] = 0.f;
    nk[i] = qs.n_keys[i0 + i];
    q[i] = qs.q[i0 + i];
    max_n = std::max(max_n, nk[i]);
  }
  const bool want_entropy = qs.entropy != nullptr;
  const __m512 vscale = _mm512_set1_ps(scale);
  __m512 p[NQ];  // this chunk's probabilities, one lane per key
  for (int base = 0; base < max_n; base += 16) {
    const elem* kt = static_cast<const elem*>(kv.k[base / bt]) + base % bt;  // dim d of the 16 keys at kt + d * bt
    const elem* vt = static_cast<const elem*>(kv.v[base / bt]) + static_cast<int64_t>(base % bt) * hd;
    // Tiles of one sequence are pages apart in the pool, where the hardware prefetchers stop:
    // fetch the chunk after next while this one computes (2 K lines per score step, C V lines
    // per value step).
    const int ahead = base + 2 * 16;  // measured +5% for 16 sequences at depth 512, neutral for 1
    const char* kt_next =
        ahead < max_n ? reinterpret_cast<const char*>(static_cast<const elem*>(kv.k[ahead / bt]) + ahead % bt) : nullptr;
    const char* vt_next =
        ahead < max_n ? reinterpret_cast<const char*>(static_cast<const elem*>(kv.v[ahead / bt]) + static_cast<int64_t>(ahead % bt) * hd)
                      : nullptr;
    // Two chains per query (even and odd d) so that few queries still hide the FMA latency.
    __m512 s[NQ], s2[NQ];
#pragma GCC unroll 16
    for (int i = 0; i < NQ; ++i) s[i] = _mm512_setzero_ps(), s2[i] = _mm512_setzero_ps();
#pragma GCC unroll 2
    for (int d = 0; d < hd; d += 2) {
      const __m512 k0 = E::load(kt + static_cast<int64_t>(d) * bt);
      const __m512 k1 = E::load(kt + static_cast<int64_t>(d + 1) * bt);
      if (kt_next) {
        _mm_prefetch(kt_next + static_cast<int64_t>(d) * bt * sizeof(elem), _MM_HINT_T0);
        _mm_prefetch(kt_next + static_cast<int64_t>(d + 1) * bt * sizeof(elem), _MM_HINT_T0);
      }
#pragma GCC unroll 16
      for (int i = 0; i < NQ; ++i) {
        s[i] = _mm512_fmadd_ps(_mm512_set1_ps(q[i][d]), k0, s[i]);
        s2[i] = _mm512_fmadd_ps(_mm512_set1_ps(q[i][d + 1]), k1, s2[i]);
      }
    }
#pragma GCC unroll 16
    for (int i = 0; i < NQ; ++i) s[i] = _mm512_add_ps(s[i], s2[i]);
    __m512 vsc = _mm512_setzero_ps();  // q8: the chunk's value scales, folded into p below
    if constexpr (is_scaled<E>) {
      const __m512 ksc = _mm512_loadu_ps(q8_tile_scales(kv.k[base / bt], bt, hd) + base % bt);
      vsc = _mm512_loadu_ps(q8_tile_scales(kv.v[base / bt], bt, hd) + base % bt);
#pragma GCC unroll 16
      for (int i = 0; i < NQ; ++i) s[i] = _mm512_mul_ps(s[i], ksc);
    }
#pragma GCC unroll 16
    for (int i = 0; i < NQ; ++i) {
      const int visible = nk[i] - base;
      if (visible <= 0) {  // this query's keys ended in an earlier chunk
        p[i] = _mm512_setzero_ps();
        continue;
      }
      const __mmask16 mask = visible >= 16 ? __mmask16(0xffff) : __mmask16((1u << visible) - 1);
      const __m512 si = _mm512_mul_ps(s[i], vscale);
      const float m_new = std::max(m[i], _mm512_mask_reduce_max_ps(mask, si));
      const __m512 vm = _mm512_set1_ps(m_new);
      const __m512 pi = _mm512_maskz_mov_ps(mask, exp512(_mm512_sub_ps(si, vm)));
      const float p_sum = _mm512_reduce_add_ps(pi);
      const float ps_sum = want_entropy ? _mm512_reduce_add_ps(_mm512_maskz_mul_ps(mask, pi, si)) : 0.f;
      if (m_new != m[i]) {
        // Rescale what was summed under the old maximum (exp(-inf) = 0 on the first chunk). The
        // vector exp, not a libm call: a call would spill every accumulator register.
        const __m512 vc = exp512(_mm512_sub_ps(_mm512_set1_ps(m[i]), vm));
        const float corr = _mm512_cvtss_f32(vc);
        l[i] *= corr, e[i] *= corr;
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) acc[i][c] = _mm512_mul_ps(acc[i][c], vc);
        m[i] = m_new;
      }
      l[i] += p_sum, e[i] += ps_sum;
      if constexpr (is_scaled<E>) p[i] = _mm512_mul_ps(pi, vsc);
      else p[i] = pi;
    }
    const int n_valid = std::min(16, max_n - base);
    // Lane t of p broadcast by a permute: storing p and reloading single floats stalls store
    // forwarding (measured 10x slower).
    __m512i lane = _mm512_setzero_si512();
    for (int t = 0; t < n_valid; ++t, lane = _mm512_add_epi32(lane, _mm512_set1_epi32(1))) {
      __m512 v[C];
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) v[c] = E::load(vt + static_cast<int64_t>(t) * hd + 16 * c);
      if (vt_next) {  // one line per 64 bytes of the next chunk's value row
#pragma GCC unroll 8
        for (int c = 0; c < C; c += 64 / (16 * static_cast<int>(sizeof(elem))))
          _mm_prefetch(vt_next + (static_cast<int64_t>(t) * hd + 16 * c) * sizeof(elem), _MM_HINT_T0);
      }
#pragma GCC unroll 16
      for (int i = 0; i < NQ; ++i) {
        const __m512 pt = _mm512_permutexvar_ps(lane, p[i]);
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) acc[i][c] = _mm512_fmadd_ps(pt, v[c], acc[i][c]);
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < NQ; ++i) {
    const __m512 inv = _mm512_set1_ps(1.f / l[i]);
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(qs.out[i0 + i] + 16 * c, _mm512_mul_ps(acc[i][c], inv));
    if (want_entropy) qs.entropy[i0 + i] = std::max(0.f, m[i] + std::log(l[i]) - e[i] / l[i]);
  }
}

template <class E, int C>
void attention_hd(const kv_tiles& kv, const attention_queries& qs, float scale) {
  constexpr int nq = C >= 8 ? 2 : C >= 4 ? 4 : 8;  // 16 accumulator registers per tile
  int i = 0;
  for (; i + nq <= qs.n_q; i += nq) query_tile<E, C, nq>(kv, qs, i, scale);
  switch (qs.n_q - i) {
    case 7: if constexpr (nq > 7) query_tile<E, C, 7>(kv, qs, i, scale); break;
    case 6: if constexpr (nq > 6) query_tile<E, C, 6>(kv, qs, i, scale); break;
    case 5: if constexpr (nq > 5) query_tile<E, C, 5>(kv, qs, i, scale); break;
    case 4: if constexpr (nq > 4) query_tile<E, C, 4>(kv, qs, i, scale); break;
    case 3: if constexpr (nq > 3) query_tile<E, C, 3>(kv, qs, i, scale); break;
    case 2: if constexpr (nq > 2) query_tile<E, C, 2>(kv, qs, i, scale); break;
    case 1: query_tile<E, C, 1>(kv, qs, i, scale); break;
    default: break;
  }
}

}  // namespace

bool supports(int head_dim, int block_tokens) {
  return (head_dim == 32 || head_dim == 64 || head_dim == 96 || head_dim == 128) && block_tokens > 0 && block_tokens % 16 == 0;
}

template <int C>
void attention_of(const kv_tiles& kv, const attention_queries& qs, float scale) {
  switch (kv.elem) {
    case kv_elem::f32: attention_hd<f32_elems, C>(kv, qs, scale); break;
    case kv_elem::f16: attention_hd<f16_elems, C>(kv, qs, scale); break;
    case kv_elem::q8: attention_hd<q8_elems, C>(kv, qs, scale); break;
  }
}

void attention(const kv_tiles& kv, const attention_queries& qs, float scale) {
  switch (kv.head_dim) {
    case 32: attention_of<2>(kv, qs, scale); break;
    case 64: attention_of<4>(kv, qs, scale); break;
    case 96: attention_of<6>(kv, qs, scale); break;  // Phi-3
    case 128: attention_of<8>(kv, qs, scale); break;
    default: ref::attention(kv, qs, scale); break;
  }
}

}  // namespace fw::cpu::avx512
