// q8_0_kernel: a quant_kernel plugin for q8_0 weights, built from the project's own CPU kernels
// (kernels/cpu, linked in statically): activations are quantized to 8-bit blocks once per call and
// the best SIMD path of this host (AVX-512 VNNI, AVX2, scalar) computes y = x . w^T. It exists to
// prove the quant_kernel ABI end to end (its results equal the built-in kernels bit for bit) and
// as a template for out-of-tree kernels, which include only <flywheel/plugin_sdk.h>.
// Params: {"simd": "scalar" | "avx2" | "avx512"} caps the SIMD level (default: the best).
// Thread-safety: an object is immutable after create(); every function is re-entrant. No
// thread_local and no static objects with destructors, so dlclose really unloads the library.
#include <flywheel/plugin_sdk.h>

#include <exception>
#include <new>
#include <vector>

#include "kernels/format/quant_ref.hpp"
#include "kernels/cpu/vec_dot.hpp"
#include "simd_param.hpp"

#ifndef FW_PLUGIN_VERSION
#define FW_PLUGIN_VERSION "0.0.0"
#endif

namespace {

constexpr uint32_t q8_0_id = static_cast<uint32_t>(fw::ggml_type::q8_0);

struct q8_0_kernel {
  fw::cpu::dot_kernel kernel;
};

int gemv(void* self, uint32_t type, const void* w, size_t row_bytes, int64_t k, int64_t n, const float* x,
         int64_t m, float* y) {
  try {
    if (!self) return FW_PLUGIN_E_INVALID;
    if (type != q8_0_id) return FW_PLUGIN_E_UNSUPPORTED;
    if (k <= 0 || k % fw::qk8_0 != 0 || n < 0 || m < 0) return FW_PLUGIN_E_INVALID;
    if (row_bytes < static_cast<size_t>(k / fw::qk8_0) * sizeof(fw::block_q8_0)) return FW_PLUGIN_E_INVALID;
    if (n == 0 || m == 0) return FW_PLUGIN_OK;
    if (!w || !x || !y) return FW_PLUGIN_E_INVALID;
    const auto& kern = static_cast<q8_0_kernel*>(self)->kernel;
    const int64_t blocks = k / fw::qk8_0;
    std::vector<fw::cpu::block_q8x> act(static_cast<size_t>(blocks * m));
    for (int64_t j = 0; j < m; ++j) kern.quantize(x + j * k, act.data() + j * blocks, k);
    kern.gemm(k, w, row_bytes, n, act.data(), blocks * sizeof(fw::cpu::block_q8x), m, y, n);
    return FW_PLUGIN_OK;
  } catch (const std::bad_alloc&) {
    return FW_PLUGIN_E_NOMEM;
  } catch (...) {
    return FW_PLUGIN_E_INTERNAL;
  }
}

int quantize_row(void*, uint32_t type, const float* x, void* dst, int64_t k) {
  if (type != q8_0_id) return FW_PLUGIN_E_UNSUPPORTED;
  if (!x || !dst || k <= 0 || k % fw::qk8_0 != 0) return FW_PLUGIN_E_INVALID;
  fw::quantize_row_ref(fw::ggml_type::q8_0, x, dst, k);
  return FW_PLUGIN_OK;
}

int dequantize_row(void*, uint32_t type, const void* src, float* y, int64_t k) {
  if (type != q8_0_id) return FW_PLUGIN_E_UNSUPPORTED;
  if (!src || !y || k <= 0 || k % fw::qk8_0 != 0) return FW_PLUGIN_E_INVALID;
  fw::dequantize_row_ref(fw::ggml_type::q8_0, src, y, k);
  return FW_PLUGIN_OK;
}

int probe(char*, size_t) { return 0; }  // the scalar path runs on any x86-64

void* create(const char* params_json, char* err, size_t err_len) {
  try {
    fw::cpu::simd_level level;
    if (!fw_plugin::simd_level_param(params_json, level, err, err_len)) return nullptr;
    return new q8_0_kernel{fw::cpu::select_dot_kernel(fw::ggml_type::q8_0, level)};
  } catch (const std::exception& e) {
    fw_plugin_message(err, err_len, e.what());
  } catch (...) {
    fw_plugin_message(err, err_len, "unknown exception");
  }
  return nullptr;
}

void destroy(void* self) { delete static_cast<q8_0_kernel*>(self); }

const uint32_t types[] = {q8_0_id};
const fw_quant_kernel_v1 kernel_table = {types, 1, gemv, quantize_row, dequantize_row};
const fw_plugin_v1 plugin = {FW_PLUGIN_ABI_VERSION, FW_PLUGIN_QUANT_KERNEL, "q8_0_kernel", FW_PLUGIN_VERSION,
                             probe, create, destroy, &kernel_table};

}  // namespace

extern "C" FW_PLUGIN_EXPORT const fw_plugin_v1* fw_plugin_entry(void) { return &plugin; }
