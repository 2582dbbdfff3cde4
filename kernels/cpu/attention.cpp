#include "kernels/cpu/attention.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/format/kv_q8.hpp"
#include "kernels/format/quant_ref.hpp"

namespace fw::cpu {

namespace ref {

// Element i of a tile, of token t, as float.
float at(const kv_tiles& kv, const void* tile, int64_t i, int t) {
  switch (kv.elem) {
    case kv_elem::f16: return fp16_to_fp32(static_cast<const uint16_t*>(tile)[i]);
    case kv_elem::q8:
      return q8_tile_scales(tile, kv.block_tokens, kv.head_dim)[t] * static_cast<const int8_t*>(tile)[i];
    case kv_elem::f32: break;
  }
  return static_cast<const float*>(tile)[i];
}

void attention(const kv_tiles& kv, const attention_queries& qs, float scale) {
  const int hd = kv.head_dim, bt = kv.block_tokens;
  std::vector<float> s;
  for (int i = 0; i < qs.n_q; ++i) {
    const int n = qs.n_keys[i];
    s.resize(n);
    const float* q = qs.q[i];
    float mx = -INFINITY;
    for (int t = 0; t < n; ++t) {
      const void* kt = kv.k[t / bt];
      float d = 0.f;
      for (int e = 0; e < hd; ++e) d += q[e] * at(kv, kt, static_cast<int64_t>(e) * bt + t % bt, t % bt);
      s[t] = d * scale;
      mx = std::max(mx, s[t]);
    }
    double sum = 0.0;
    for (int t = 0; t < n; ++t) {
      s[t] = std::exp(s[t] - mx);
      sum += s[t];
    }
    const float inv = static_cast<float>(1.0 / sum);
    double h = 0.0;
    for (int t = 0; t < n; ++t) {
      s[t] *= inv;
      if (s[t] > 0.f) h -= s[t] * std::log(static_cast<double>(s[t]));
    }
    if (qs.entropy) qs.entropy[i] = static_cast<float>(h);
    float* out = qs.out[i];
    std::fill(out, out + hd, 0.f);
    for (int t = 0; t < n; ++t) {
      const void* vt = kv.v[t / bt];
      for (int e = 0; e < hd; ++e) out[e] += s[t] * at(kv, vt, static_cast<int64_t>(t % bt) * hd + e, t % bt);
    }
  }
}

}  // namespace ref

attention_fn select_attention(simd_level max_level, int head_dim, int block_tokens) {
  if (max_level >= simd_level::avx512 && host_features().has_avx512() && avx512::supports(head_dim, block_tokens))
    return avx512::attention;
  if (max_level >= simd_level::avx2 && host_features().has_avx2() && avx2::supports(head_dim, block_tokens))
    return avx2::attention;
  return ref::attention;
}

}  // namespace fw::cpu
