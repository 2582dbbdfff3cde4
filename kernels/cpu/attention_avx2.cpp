// AVX2 attention: a block of up to 4 queries of one KV head per pass over their keys, the
// scores kept in a small per-thread buffer between a scores pass, a softmax pass and a values
// pass (see query_block). Keys are read as 8 consecutive keys of one dimension (the transposed
// K tile), values 16 dimensions of one token at a time.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/exp_avx2.hpp"
#include "kernels/cpu/simd_avx2.hpp"
#include "kernels/format/kv_q8.hpp"

namespace fw::cpu::avx2 {
namespace {

struct f32_elems {
  using elem = float;
  static __m256 load(const elem* p) { return _mm256_loadu_ps(p); }
};
struct f16_elems {
  using elem = uint16_t;
  static __m256 load(const elem* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
};
// int8 with a scale per token after the tile's elements (kernels/format/kv_q8.hpp).
struct q8_elems {
  using elem = int8_t;
  static __m256 load(const elem* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
};
template <class E>
constexpr bool is_scaled = std::is_same_v<E, q8_elems>;

// Up to 4 queries of one KV head at a time, in three passes over their keys:
//   scores:  S[i][t] = scale * q_i . K[t] for 8 keys per vector; each loaded key vector serves
//            every query of the block, 2 NQ independent FMA chains
//   softmax: per query, over its own n_keys: m = max S, P = e^(S - m) (0 past n_keys), l = sum P
//            and, for the entropy, sum P * S
//   values:  out_i[16 dims] = sum over t of P[i][t] V[t][16 dims] / l_i, one dimension block at
//            a time so the 2 NQ accumulators stay in registers
// S lives in a per-thread buffer of NQ rows. (An online softmax over 8-key chunks, 1 query per
// tile, measured ~2x slower here: its loads served one query and its per-chunk max / rescale
// made one long dependency chain.) The loops over the block's queries are unrolled at compile
// time so the accumulators stay in registers (the project builds with -O2, which does not
// unroll: rolled, GCC kept them in memory and the kernel ran at a quarter of its speed).
constexpr int max_block_queries = 4;

template <class E, int HD, int NQ>
void query_block(const kv_tiles& kv, const attention_queries& qs, int i0, float scale, std::vector<float>& buf) {
  using elem = typename E::elem;
  const int bt = kv.block_tokens;
  const float* q[NQ];
  int nk[NQ];
  int max_n = 0;
#pragma GCC unroll 4
  for (int i = 0; i < NQ; ++i) {
    q[i] = qs.q[i0 + i];
    nk[i] = qs.n_keys[i0 + i];
    max_n = std::max(max_n, nk[i]);
  }
  const int ld = (max_n + 7) / 8 * 8 + 8;  // + 8: rows apart by more than a power of two
  if (buf.size() < static_cast<size_t>(NQ * ld)) buf.resize(static_cast<size_t>(NQ * ld));
  float* S = buf.data();

  // Scores, 8 keys at a time (keys past max_n in the last chunk are computed and then masked).
  const __m256 vscale = _mm256_set1_ps(scale);
  for (int base = 0; base < max_n; base += 8) {
    const elem* kt = static_cast<const elem*>(kv.k[base / bt]) + base % bt;
    __m256 s0[NQ], s1[NQ];
#pragma GCC unroll 4
    for (int i = 0; i < NQ; ++i) s0[i] = _mm256_setzero_ps(), s1[i] = _mm256_setzero_ps();
#pragma GCC unroll 2
    for (int d = 0; d < HD; d += 2) {
      const __m256 k0 = E::load(kt + static_cast<int64_t>(d) * bt);
      const __m256 k1 = E::load(kt + static_cast<int64_t>(d + 1) * bt);
#pragma GCC unroll 4
      for (int i = 0; i < NQ; ++i) {
        s0[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(q[i] + d), k0, s0[i]);
        s1[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(q[i] + d + 1), k1, s1[i]);
      }
    }
    __m256 sc = vscale;  // q8: times each key's scale
    if constexpr (is_scaled<E>)
      sc = _mm256_mul_ps(vscale, _mm256_loadu_ps(q8_tile_scales(kv.k[base / bt], bt, HD) + base % bt));
#pragma GCC unroll 4
    for (int i = 0; i < NQ; ++i) _mm256_storeu_ps(S + i * ld + base, _mm256_mul_ps(_mm256_add_ps(s0[i], s1[i]), sc));
  }

  // Softmax per query over its own keys; P is 0 from n_keys on (masked: the scores there may be
  // made from tile memory no token has written).
  const bool want_entropy = qs.entropy != nullptr;
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 neg_inf = _mm256_set1_ps(-INFINITY);
  float inv_l[NQ];
  for (int i = 0; i < NQ; ++i) {
    float* row = S + i * ld;
    const int n = nk[i];
    __m256 mv = neg_inf;
    for (int t = 0; t < n; t += 8) {
      const __m256 valid = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(n - t), lanes));
      mv = _mm256_max_ps(mv, _mm256_blendv_ps(neg_inf, _mm256_loadu_ps(row + t), valid));
    }
    const float m = hmax(mv);
    const __m256 vm = _mm256_set1_ps(m);
    __m256 lsum = _mm256_setzero_ps(), esum = _mm256_setzero_ps();
    for (int t = 0; t < max_n; t += 8) {
      const __m256 valid = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(n - t), lanes));
      const __m256 x = _mm256_loadu_ps(row + t);
      const __m256 p = _mm256_and_ps(valid, exp256(_mm256_sub_ps(x, vm)));
      _mm256_storeu_ps(row + t, p);
      lsum = _mm256_add_ps(lsum, p);
      if (want_entropy) esum = _mm256_add_ps(esum, _mm256_and_ps(valid, _mm256_mul_ps(p, x)));
    }
    const float l = hsum(lsum);
    inv_l[i] = 1.f / l;
    if (want_entropy) qs.entropy[i0 + i] = std::max(0.f, m + std::log(l) - hsum(esum) / l);
    if constexpr (is_scaled<E>) {  // q8: each value row's scale folded into its probability
      for (int t = 0; t < max_n; t += 8)
        _mm256_storeu_ps(row + t, _mm256_mul_ps(_mm256_loadu_ps(row + t),
                                                _mm256_loadu_ps(q8_tile_scales(kv.v[t / bt], bt, HD) + t % bt)));
    }
  }

  // Values, 16 dimensions at a time, token by token through the tiles.
  for (int db = 0; db < HD; db += 16) {
    __m256 a0[NQ], a1[NQ];
#pragma GCC unroll 4
    for (int i = 0; i < NQ; ++i) a0[i] = _mm256_setzero_ps(), a1[i] = _mm256_setzero_ps();
    for (int tile = 0; tile * bt < max_n; ++tile) {
      const elem* vt = static_cast<const elem*>(kv.v[tile]) + db;
      const int t0 = tile * bt, t_end = std::min(bt, max_n - t0);
      for (int t = 0; t < t_end; ++t, vt += HD) {
        const __m256 v0 = E::load(vt), v1 = E::load(vt + 8);
#pragma GCC unroll 4
        for (int i = 0; i < NQ; ++i) {
          const __m256 p = _mm256_broadcast_ss(S + i * ld + t0 + t);
          a0[i] = _mm256_fmadd_ps(p, v0, a0[i]);
          a1[i] = _mm256_fmadd_ps(p, v1, a1[i]);
        }
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < NQ; ++i) {
      const __m256 inv = _mm256_set1_ps(inv_l[i]);
      _mm256_storeu_ps(qs.out[i0 + i] + db, _mm256_mul_ps(a0[i], inv));
      _mm256_storeu_ps(qs.out[i0 + i] + db + 8, _mm256_mul_ps(a1[i], inv));
    }
  }
}

template <class E, int HD>
void attention_hd(const kv_tiles& kv, const attention_queries& qs, float scale) {
  thread_local std::vector<float> buf;
  int i = 0;
  for (; i + max_block_queries <= qs.n_q; i += max_block_queries)
    query_block<E, HD, max_block_queries>(kv, qs, i, scale, buf);
  switch (qs.n_q - i) {
    case 3: query_block<E, HD, 3>(kv, qs, i, scale, buf); break;
    case 2: query_block<E, HD, 2>(kv, qs, i, scale, buf); break;
    case 1: query_block<E, HD, 1>(kv, qs, i, scale, buf); break;
    default: break;
  }
}

}  // namespace

bool supports(int head_dim, int block_tokens) {
  return (head_dim == 32 || head_dim == 64 || head_dim == 96 || head_dim == 128) && block_tokens > 0 && block_tokens % 8 == 0;
}

template <int HD>
void attention_of(const kv_tiles& kv, const attention_queries& qs, float scale) {
  switch (kv.elem) {
    case kv_elem::f32: attention_hd<f32_elems, HD>(kv, qs, scale); break;
    case kv_elem::f16: attention_hd<f16_elems, HD>(kv, qs, scale); break;
    case kv_elem::q8: attention_hd<q8_elems, HD>(kv, qs, scale); break;
  }
}

void attention(const kv_tiles& kv, const attention_queries& qs, float scale) {
  switch (kv.head_dim) {
    case 32: attention_of<32>(kv, qs, scale); break;
    case 64: attention_of<64>(kv, qs, scale); break;
    case 96: attention_of<96>(kv, qs, scale); break;  // Phi-3
    case 128: attention_of<128>(kv, qs, scale); break;
    default: ref::attention(kv, qs, scale); break;
  }
}

}  // namespace fw::cpu::avx2
