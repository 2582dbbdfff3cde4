#include "kernels/cpu/cpu_features.hpp"

#include <cpuid.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <sys/syscall.h>
#include <unistd.h>

namespace fw::cpu {
namespace {

uint64_t xgetbv0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

cpu_features detect() {
  cpu_features f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    char vendor[13] = {};
    std::memcpy(vendor, &b, 4), std::memcpy(vendor + 4, &d, 4), std::memcpy(vendor + 8, &c, 4);
    f.intel = std::strcmp(vendor, "GenuineIntel") == 0;
  }
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1;
  const uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm_ok = (xcr0 & 0x6) == 0x6;
  const bool zmm_ok = (xcr0 & 0xe6) == 0xe6;
  f.fma = ((c >> 12) & 1) && ymm_ok;
  f.f16c = ((c >> 29) & 1) && ymm_ok;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = ((b >> 5) & 1) && ymm_ok;
  f.avx512f = ((b >> 16) & 1) && zmm_ok;
  f.avx512bw = ((b >> 30) & 1) && zmm_ok;
  f.avx512vl = ((b >> 31) & 1) && zmm_ok;
  f.avx512vnni = ((c >> 11) & 1) && zmm_ok;
  f.amx_bf16 = (d >> 22) & 1;
  f.amx_int8 = (d >> 25) & 1;
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  f.avx512bf16 = ((a1 >> 5) & 1) && zmm_ok;
  f.avx_vnni = ((a1 >> 4) & 1) && ymm_ok;
  // XCR0 bits 17-18: the OS manages tile config and data; Linux still hands tile data out only
  // on request (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA), for the whole process.
  if ((f.amx_int8 || f.amx_bf16) && ((xcr0 >> 17) & 3) == 3) {
    constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    f.amx_os = syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
  }
  return f;
}

}  // namespace

std::string cpu_features::describe() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx_vnni, "avx-vnni");
  add(avx512vnni, "avx512vnni");
  add(avx512bf16, "avx512bf16");
  add(amx_int8, "amx-int8");
  add(amx_bf16, "amx-bf16");
  if ((amx_int8 || amx_bf16) && !amx_os) add(true, "(amx tiles not granted by the OS)");
  return s.empty() ? "none" : s;
}

const cpu_features& host_features() {
  static const cpu_features f = detect();
  return f;
}

const char* to_string(simd_level level) {
  switch (level) {
    case simd_level::scalar: return "scalar";
    case simd_level::avx2: return "avx2";
    case simd_level::avx2_vnni: return "avx2vnni";
    case simd_level::avx512: return "avx512";
    case simd_level::amx: return "amx";
  }
  return "?";
}

simd_level best_simd_level() {
  const auto& f = host_features();
  simd_level best = f.has_amx()         ? simd_level::amx
                    : f.has_avx512_vnni() ? simd_level::avx512
                    : f.has_avx2_vnni() ? simd_level::avx2_vnni
                    : f.has_avx2()      ? simd_level::avx2
                                        : simd_level::scalar;
  if (const char* env = std::getenv("FW_SIMD")) {
    simd_level want = best;
    if (std::strcmp(env, "scalar") == 0) want = simd_level::scalar;
    else if (std::strcmp(env, "avx2") == 0) want = simd_level::avx2;
    else if (std::strcmp(env, "avx2vnni") == 0) want = simd_level::avx2_vnni;
    else if (std::strcmp(env, "avx512") == 0) want = simd_level::avx512;
    else if (std::strcmp(env, "amx") == 0) want = simd_level::amx;
    if (want < best) best = want;
  }
  return best;
}

bool prefetch_small_tiles() {
  static const bool on = [] {
    if (const char* env = std::getenv("FW_PREFETCH_SMALL_TILES")) {
      if (std::strcmp(env, "1") == 0) return true;
      if (std::strcmp(env, "0") == 0) return false;
    }
    return host_features().intel;
  }();
  return on;
}

}  // namespace fw::cpu
