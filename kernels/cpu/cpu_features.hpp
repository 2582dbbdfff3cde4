// cpu_features: what the host CPU can run, read once from CPUID (and the OS's XSAVE state).
// Thread-safety: detect() is computed once, then immutable.
#pragma once

#include <string>

namespace fw::cpu {

struct cpu_features {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool avx_vnni = false;  ///< VEX-encoded vpdpbusd on ymm (Intel from Alder Lake, AMD Zen 5)
  bool avx512bf16 = false;
  bool amx_int8 = false;
  bool amx_bf16 = false;
  bool amx_os = false;  ///< the OS saves tile state and granted it to this process (asked once)
  bool intel = false;   ///< CPUID vendor "GenuineIntel" (a tuning choice follows it, see below)

  bool has_avx2() const { return avx2 && fma && f16c; }
  bool has_avx512() const { return has_avx2() && avx512f && avx512bw && avx512vl; }
  bool has_avx512_vnni() const { return has_avx512() && avx512vnni; }
  /// 256-bit vpdpbusd: AVX-VNNI, or the EVEX form on AVX-512 VNNI hosts (simd_level::avx2_vnni).
  bool has_avx2_vnni() const { return has_avx2() && (avx_vnni || has_avx512_vnni()); }
  /// AMX int8 tiles usable by this process (beside AVX-512 VNNI, which finishes their blocks).
  bool has_amx() const { return has_avx512_vnni() && amx_int8 && amx_os; }

  /// e.g. "avx2 fma f16c avx512f avx512bw avx512vl avx512vnni amx-int8"
  std::string describe() const;
};

/// The host's features (cached after the first call). On a CPU with AMX the first call also asks
/// Linux for the tile state (arch_prctl ARCH_REQ_XCOMP_PERM), once for the whole process.
const cpu_features& host_features();

/// SIMD level a kernel family may use. Ordered: a higher level implies the lower ones.
/// avx2_vnni: the AVX2 path with its packed int8 products (q4_0 / q4_1 / q8_0 / W8A8) on 256-bit
/// vpdpbusd and W4A16's on vpdpwssd (AVX-VNNI hosts; AVX-512 VNNI hosts run it EVEX-encoded when
/// FW_SIMD=avx2vnni caps them there).
/// amx: AVX-512 VNNI plus AMX int8 tiles for the packed products (vec_dot_packed_amx.cpp).
enum class simd_level { scalar = 0, avx2 = 1, avx2_vnni = 2, avx512 = 3, amx = 4 };

const char* to_string(simd_level level);

/// Whether the packed block-format products (q4_0 / q4_1 / q8_0) prefetch weights in software in
/// tiles of 1-3 activation rows (decode, small verification passes); tiles of 4+ rows always do.
/// Measured with the binaries alternating, 2026-12-06: on the Intel Xeon host decode ran ~2x
/// faster with it (its hardware prefetcher alone kept one core far below its bandwidth); on the
/// AMD EPYC host (CPU family 25) 5-25% slower, the extra load-port work not paying there. So: on
/// for Intel, off elsewhere; FW_PREFETCH_SMALL_TILES=1|0 overrides (read once).
bool prefetch_small_tiles();

/// The best level this host supports, lowered by FW_SIMD=scalar|avx2|avx2vnni|avx512|amx when set (for tests
/// and for users who need to rule a path out).
simd_level best_simd_level();

}  // namespace fw::cpu
