// simd_param: the {"simd": "scalar" | "avx2" | "avx2vnni" | "avx512"} parameter of the shipped kernel plugins,
// which caps the SIMD level of the project's CPU kernels they are built from.
#pragma once

#include <flywheel/plugin_sdk.h>

#include "kernels/cpu/cpu_features.hpp"
#include "plugin_params.hpp"

namespace fw_plugin {

/// The best SIMD level of this host, capped by params' "simd"; false (with err written) for a bad value.
inline bool simd_level_param(const char* params_json, fw::cpu::simd_level& level, char* err, size_t err_len) {
  level = fw::cpu::best_simd_level();
  if (auto simd = param(params_json ? params_json : "{}", "simd")) {
    fw::cpu::simd_level cap;
    if (*simd == "scalar") cap = fw::cpu::simd_level::scalar;
    else if (*simd == "avx2") cap = fw::cpu::simd_level::avx2;
    else if (*simd == "avx2vnni") cap = fw::cpu::simd_level::avx2_vnni;
    else if (*simd == "avx512") cap = fw::cpu::simd_level::avx512;
    else {
      fw_plugin_message(err, err_len, "param simd must be \"scalar\", \"avx2\", \"avx2vnni\" or \"avx512\"");
      return false;
    }
    if (cap < level) level = cap;
  }
  return true;
}

}  // namespace fw_plugin
