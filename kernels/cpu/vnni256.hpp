// vnni256: the 256-bit VNNI integer products for the AVX2 tiles (vec_dot_packed_avx2.cpp,
// fw_dot_packed_avx2.cpp), as a policy the tiles are templated on. `no_vnni`: the tile keeps
// AVX2's vpmaddubsw / vpmaddwd. `vnni256<Evex>`: vpdpbusd (bytes) and vpdpwssd (int16 pairs) do
// the multiply, the sum of fours (pairs) and the int32 accumulation in one instruction. Each is
// inline assembly in a fixed encoding, so one AVX2 translation unit holds both: VEX (AVX-VNNI:
// Intel cores from Alder Lake, AMD Zen 5) for the hosts that have it, EVEX (AVX-512 VNNI + VL) so
// that AVX-512 hosts run and test the same tiles; the "x" constraint keeps ymm0-15, as on AVX2.
// Include only from translation units compiled for AVX2.
#pragma once

#include <immintrin.h>

namespace fw::cpu::avx2 {

struct no_vnni {
  static constexpr bool enabled = false;
};

template <bool Evex>
struct vnni256 {
  static constexpr bool enabled = true;
  /// acc + per int32 lane the sum of four u (unsigned bytes) x s (signed bytes); never saturates.
  static __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
    if constexpr (Evex) asm("%{evex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
    else asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
    return acc;
  }
  /// acc + per int32 lane the sum of two int16 products a x b (vpmaddwd then vpaddd, fused).
  static __m256i dpwssd(__m256i acc, __m256i a, __m256i b) {
    if constexpr (Evex) asm("%{evex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    else asm("%{vex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    return acc;
  }
};

}  // namespace fw::cpu::avx2
