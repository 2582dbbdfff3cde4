// fw_quant_kernel: a quant_kernel v2 plugin serving flywheel's own formats (fw_w8a8 and
// fw_w4a16_g32/g64/g128, made by `flywheel quantize`), built from the project's CPU kernels
// (kernels/cpu, linked in statically). Through the v2 table the host quantizes activations once
// in the format this plugin names and splits weight rows over its own kernel threads, so the
// plugin serves at the built-in kernels' speed and its results equal them bit for bit. It is the
// template for out-of-tree kernels of new formats, which include only <flywheel/plugin_sdk.h>.
// Params: {"simd": "scalar" | "avx2" | "avx512"} caps the SIMD level (default: the best).
// Thread-safety: an object is immutable after create(); every function is re-entrant. No
// thread_local and no static objects with destructors, so dlclose really unloads the library.
#include <flywheel/plugin_sdk.h>

#include <exception>
#include <new>

#include "kernels/cpu/vec_dot.hpp"
#include "kernels/format/fw_formats.hpp"
#include "kernels/format/quant_ref.hpp"
#include "simd_param.hpp"

#ifndef FW_PLUGIN_VERSION
#define FW_PLUGIN_VERSION "0.0.0"
#endif

namespace {

using fw::ggml_type;

const uint32_t types[] = {static_cast<uint32_t>(ggml_type::fw_w8a8), static_cast<uint32_t>(ggml_type::fw_w4a16_g32),
                          static_cast<uint32_t>(ggml_type::fw_w4a16_g64), static_cast<uint32_t>(ggml_type::fw_w4a16_g128)};
constexpr int n_types = 4;

struct fw_kernel {
  fw::cpu::dot_kernel kernels[n_types];
};

int index_of(uint32_t type) {
  for (int i = 0; i < n_types; ++i)
    if (types[i] == type) return i;
  return -1;
}

bool valid_k(uint32_t type, int64_t k) {
  const auto t = fw::type_traits(type);
  return t && k > 0 && k % t->block_size == 0;
}

int act_format(void* self, uint32_t type, int64_t k, uint32_t* format, size_t* row_bytes) {
  if (!self || !format || !row_bytes) return FW_PLUGIN_E_INVALID;
  const int i = index_of(type);
  if (i < 0) return FW_PLUGIN_E_UNSUPPORTED;
  if (!valid_k(type, k)) return FW_PLUGIN_E_INVALID;
  const auto act = static_cast<fw_kernel*>(self)->kernels[i].act;
  *format = act == fw::cpu::act_format::i8_row ? FW_ACT_I8_ROW : FW_ACT_I16_ROW;
  *row_bytes = fw::cpu::act_row_bytes(act, k);
  return FW_PLUGIN_OK;
}

int quantize_act(void* self, uint32_t type, const float* x, int64_t k, float static_scale, void* out) {
  if (!self || !x || !out) return FW_PLUGIN_E_INVALID;
  const int i = index_of(type);
  if (i < 0) return FW_PLUGIN_E_UNSUPPORTED;
  if (!valid_k(type, k)) return FW_PLUGIN_E_INVALID;
  static_cast<fw_kernel*>(self)->kernels[i].quantize_row(x, out, k, static_scale);
  return FW_PLUGIN_OK;
}

int gemm(void* self, uint32_t type, const void* w, size_t row_bytes, int64_t k, int64_t n, const void* act,
         size_t act_stride, int64_t m, float* y, int64_t ldy) {
  if (!self) return FW_PLUGIN_E_INVALID;
  const int i = index_of(type);
  if (i < 0) return FW_PLUGIN_E_UNSUPPORTED;
  if (!valid_k(type, k) || n < 0 || m < 0 || ldy < n) return FW_PLUGIN_E_INVALID;
  if (row_bytes < fw::row_bytes(*fw::type_traits(type), static_cast<uint64_t>(k))) return FW_PLUGIN_E_INVALID;
  if (n == 0 || m == 0) return FW_PLUGIN_OK;
  if (!w || !act || !y) return FW_PLUGIN_E_INVALID;
  const auto& kern = static_cast<fw_kernel*>(self)->kernels[i];
  if (m == 1) kern.gemv(k, w, row_bytes, n, act, y);
  else kern.gemm(k, w, row_bytes, n, act, act_stride, m, y, ldy);
  return FW_PLUGIN_OK;
}

int quantize_row(void*, uint32_t type, const float* x, void* dst, int64_t k) {
  if (index_of(type) < 0) return FW_PLUGIN_E_UNSUPPORTED;
  if (!x || !dst || !valid_k(type, k)) return FW_PLUGIN_E_INVALID;
  fw::quantize_row_ref(static_cast<ggml_type>(type), x, dst, k);
  return FW_PLUGIN_OK;
}

int dequantize_row(void*, uint32_t type, const void* src, float* y, int64_t k) {
  if (index_of(type) < 0) return FW_PLUGIN_E_UNSUPPORTED;
  if (!src || !y || !valid_k(type, k)) return FW_PLUGIN_E_INVALID;
  fw::dequantize_row_ref(static_cast<ggml_type>(type), src, y, k);
  return FW_PLUGIN_OK;
}

int probe(char*, size_t) { return 0; }  // the scalar path runs on any x86-64

void* create(const char* params_json, char* err, size_t err_len) {
  try {
    fw::cpu::simd_level level;
    if (!fw_plugin::simd_level_param(params_json, level, err, err_len)) return nullptr;
    auto* k = new fw_kernel;
    for (int i = 0; i < n_types; ++i) k->kernels[i] = fw::cpu::select_dot_kernel(static_cast<ggml_type>(types[i]), level);
    return k;
  } catch (const std::exception& e) {
    fw_plugin_message(err, err_len, e.what());
  } catch (...) {
    fw_plugin_message(err, err_len, "unknown exception");
  }
  return nullptr;
}

void destroy(void* self) { delete static_cast<fw_kernel*>(self); }

const fw_quant_kernel_v2 kernel_table = {types, n_types, act_format, quantize_act, gemm, quantize_row, dequantize_row};
const fw_plugin_v1 plugin = {FW_PLUGIN_ABI_VERSION, FW_PLUGIN_QUANT_KERNEL_V2, "fw_quant_kernel", FW_PLUGIN_VERSION,
                             probe, create, destroy, &kernel_table};

}  // namespace

extern "C" FW_PLUGIN_EXPORT const fw_plugin_v1* fw_plugin_entry(void) { return &plugin; }
