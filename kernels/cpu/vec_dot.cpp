#include "kernels/cpu/vec_dot.hpp"

#include <vector>

#include "kernels/cpu/fw_dot.hpp"
#include "kernels/cpu/fw_packed_rows.hpp"
#include "kernels/format/fw_formats.hpp"
#include "kernels/ref/fw_dot_ref.hpp"

namespace fw::cpu {
namespace {

// gemv walks the rows with the path's dot (one row after another is what the hardware prefetchers
// follow best when weights stream from DRAM); gemm likewise where a path has no tiled kernel.
template <vec_dot_fn Dot>
void gemv_by_rows(int64_t k, const void* w, size_t stride, int64_t n, const void* x, float* out) {
  const auto* p = static_cast<const uint8_t*>(w);
  for (int64_t r = 0; r < n; ++r) out[r] = Dot(k, p + r * stride, x);
}

template <vec_dot_fn Dot>
void gemm_by_rows(int64_t k, const void* w, size_t ws, int64_t nw, const void* x, size_t xs, int64_t nx, float* y,
                  int64_t ldy) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* xp = static_cast<const uint8_t*>(x);
  for (int64_t j = 0; j < nx; ++j)
    for (int64_t i = 0; i < nw; ++i) y[j * ldy + i] = Dot(k, wp + i * ws, xp + j * xs);
}

template <vec_dot_fn Dot, gemm_rows_fn Gemm = gemm_by_rows<Dot>, gemv_rows_fn Gemv = gemv_by_rows<Dot>>
dot_kernel make(ggml_type t, simd_level lvl, quantize_q8x_fn quant, pack_rows_fn pack = nullptr,
                packed_gemm_fn packed = nullptr) {
  const act_format act = quant ? act_format::q8x : act_format::f32;
  return {t, lvl, act, Dot, quant, Gemv, Gemm, pack, packed};
}

/// A kernel of flywheel's row-activation formats (W8A8: int8 rows; W4A16: int16 rows).
template <vec_dot_fn Dot, gemm_rows_fn Gemm = gemm_by_rows<Dot>, gemv_rows_fn Gemv = gemv_by_rows<Dot>>
dot_kernel make_row(ggml_type t, simd_level lvl, act_format act, quantize_row_fn quant) {
  dot_kernel d{t, lvl, act, Dot, nullptr, Gemv, Gemm};
  d.quantize_row = quant;
  return d;
}

dot_kernel with_pack(dot_kernel d, pack_rows_fn pack, packed_gemm_fn gemm) {
  d.pack = pack, d.packed_gemm = gemm;
  return d;
}

void add_fw_ref(std::vector<dot_kernel>& v) {
  namespace k = ref;
  const auto lvl = simd_level::scalar;
  v.push_back(make_row<k::dot_w8a8>(ggml_type::fw_w8a8, lvl, act_format::i8_row, k::quantize_act_i8));
  v.push_back(make_row<k::dot_w4a16<32>>(ggml_type::fw_w4a16_g32, lvl, act_format::i16_row, k::quantize_act_i16));
  v.push_back(make_row<k::dot_w4a16<64>>(ggml_type::fw_w4a16_g64, lvl, act_format::i16_row, k::quantize_act_i16));
  v.push_back(make_row<k::dot_w4a16<128>>(ggml_type::fw_w4a16_g128, lvl, act_format::i16_row, k::quantize_act_i16));
}

void add_fw_avx2(std::vector<dot_kernel>& v) {
  namespace k = avx2;
  const auto lvl = simd_level::avx2;
  v.push_back(with_pack(make_row<k::dot_w8a8, k::gemm_w8a8, k::gemv_w8a8>(ggml_type::fw_w8a8, lvl, act_format::i8_row,
                                                                          k::quantize_act_i8),
                        packed::pack_w8a8, k::packed_gemm_w8a8));
  v.push_back(with_pack(make_row<k::dot_w4a16<32>, k::gemm_w4a16<32>, k::gemv_w4a16<32>>(
                               ggml_type::fw_w4a16_g32, lvl, act_format::i16_row, k::quantize_act_i16),
                           packed::pack_w4a16<32>, k::packed_gemm_w4a16<32>));
  v.push_back(with_pack(make_row<k::dot_w4a16<64>, k::gemm_w4a16<64>, k::gemv_w4a16<64>>(
                               ggml_type::fw_w4a16_g64, lvl, act_format::i16_row, k::quantize_act_i16),
                           packed::pack_w4a16<64>, k::packed_gemm_w4a16<64>));
  v.push_back(with_pack(make_row<k::dot_w4a16<128>, k::gemm_w4a16<128>, k::gemv_w4a16<128>>(
                               ggml_type::fw_w4a16_g128, lvl, act_format::i16_row, k::quantize_act_i16),
                           packed::pack_w4a16<128>, k::packed_gemm_w4a16<128>));
}

/// AVX-512 VNNI (fw_dot_avx512.cpp, fw_dot_packed_avx512.cpp): products of its own, packed
/// layouts, and AVX2's activation quantizers (a row's quantization is ~1/n of its product).
void add_fw_avx512(std::vector<dot_kernel>& v) {
  namespace k = avx512;
  const auto lvl = simd_level::avx512;
  v.push_back(with_pack(make_row<k::dot_w8a8, k::gemm_w8a8, k::gemv_w8a8>(ggml_type::fw_w8a8, lvl, act_format::i8_row,
                                                                          avx2::quantize_act_i8),
                        packed::pack_w8a8, k::packed_gemm_w8a8));
  v.push_back(with_pack(make_row<k::dot_w4a16<32>, k::gemm_w4a16<32>, k::gemv_w4a16<32>>(
                            ggml_type::fw_w4a16_g32, lvl, act_format::i16_row, avx2::quantize_act_i16),
                        packed::pack_w4a16<32>, k::packed_gemm_w4a16<32>));
  v.push_back(with_pack(make_row<k::dot_w4a16<64>, k::gemm_w4a16<64>, k::gemv_w4a16<64>>(
                            ggml_type::fw_w4a16_g64, lvl, act_format::i16_row, avx2::quantize_act_i16),
                        packed::pack_w4a16<64>, k::packed_gemm_w4a16<64>));
  v.push_back(with_pack(make_row<k::dot_w4a16<128>, k::gemm_w4a16<128>, k::gemv_w4a16<128>>(
                            ggml_type::fw_w4a16_g128, lvl, act_format::i16_row, avx2::quantize_act_i16),
                        packed::pack_w4a16<128>, k::packed_gemm_w4a16<128>));
}

// -- the providers: one table per SIMD path, one entry per weight format it implements --
// A new format is one entry in each path that implements it; a path without an entry for a type
// falls back to the next lower path (kernel reports show that as a fallback).

std::vector<dot_kernel> ref_kernels() {
  namespace k = ref;
  const auto lvl = simd_level::scalar;
  std::vector<dot_kernel> v = {make<k::dot_f32>(ggml_type::f32, lvl, nullptr),
                               make<k::dot_f16>(ggml_type::f16, lvl, nullptr),
                               make<k::dot_bf16>(ggml_type::bf16, lvl, nullptr),
                               make<k::dot_q4_0>(ggml_type::q4_0, lvl, k::quantize_q8x),
                               make<k::dot_q4_1>(ggml_type::q4_1, lvl, k::quantize_q8x),
                               make<k::dot_q8_0>(ggml_type::q8_0, lvl, k::quantize_q8x)};
  add_fw_ref(v);
  return v;
}

/// A path's packed layout (if it has one for the type) added to its kernel.
template <packed_layout (*Layout)(ggml_type)>
dot_kernel with_packing(dot_kernel d) {
  const auto p = Layout(d.type);
  d.pack = p.pack;
  d.packed_gemm = p.gemm;
  return d;
}

std::vector<dot_kernel> avx2_kernels() {
  namespace k = avx2;
  const auto lvl = simd_level::avx2;
  constexpr auto packing = with_packing<k::packed_layout_for>;
  std::vector<dot_kernel> v = {
      packing(make<k::dot_f32>(ggml_type::f32, lvl, nullptr)),
      packing(make<k::dot_f16>(ggml_type::f16, lvl, nullptr)),
      packing(make<k::dot_bf16>(ggml_type::bf16, lvl, nullptr)),
      packing(make<k::dot_q4_0, k::gemm_q4_0, k::gemv_q4_0>(ggml_type::q4_0, lvl, k::quantize_q8x)),
      packing(make<k::dot_q4_1, k::gemm_q4_1, k::gemv_q4_1>(ggml_type::q4_1, lvl, k::quantize_q8x)),
      packing(make<k::dot_q8_0, k::gemm_q8_0, k::gemv_q8_0>(ggml_type::q8_0, lvl, k::quantize_q8x))};
  add_fw_avx2(v);
  return v;
}

/// The AVX2 kernels with the packed q4_0 / q4_1 / q8_0 / W8A8 products on 256-bit vpdpbusd and
/// W4A16 on vpdpwssd (same layouts and results); all at level avx2_vnni. VEX-encoded on hosts with
/// AVX-VNNI, else EVEX (the provider is only available on AVX-512 VNNI hosts then).
std::vector<dot_kernel> avx2_vnni_kernels() {
  const auto encoding = host_features().avx_vnni ? avx2::vnni_encoding::vex : avx2::vnni_encoding::evex;
  std::vector<dot_kernel> v = avx2_kernels();
  for (auto& k : v) {
    k.level = simd_level::avx2_vnni;
    for (const auto p :
         {avx2::vnni_packed_layout_for(k.type, encoding), avx2::fw_vnni_packed_layout_for(k.type, encoding)})
      if (p.gemm && k.pack == p.pack) k.packed_gemm = p.gemm;
  }
  return v;
}

std::vector<dot_kernel> avx512_kernels() {
  namespace k = avx512;
  const auto lvl = simd_level::avx512;
  constexpr auto packing = with_packing<k::packed_layout_for>;
  std::vector<dot_kernel> v = {packing(make<k::dot_f32, k::gemm_f32>(ggml_type::f32, lvl, nullptr)),
          packing(make<k::dot_f16, k::gemm_f16>(ggml_type::f16, lvl, nullptr)),
          packing(make<k::dot_bf16, k::gemm_bf16>(ggml_type::bf16, lvl, nullptr)),
          packing(make<k::dot_q4_0, k::gemm_q4_0>(ggml_type::q4_0, lvl, k::quantize_q8x)),
          packing(make<k::dot_q4_1, k::gemm_q4_1>(ggml_type::q4_1, lvl, k::quantize_q8x)),
          packing(make<k::dot_q8_0, k::gemm_q8_0>(ggml_type::q8_0, lvl, k::quantize_q8x))};
  add_fw_avx512(v);
  return v;
}

/// The AVX-512 kernels with the products that have an AMX tile version swapped in (their level
/// stays avx512: the same layouts, quantizers and results).
std::vector<dot_kernel> amx_kernels() {
  std::vector<dot_kernel> v = avx512_kernels();
  for (auto& k : v)
    if (const auto tiles = amx::packed_layout_for(k.type); tiles.gemm && k.pack == tiles.pack)
      k.packed_gemm = tiles.gemm, k.amx_int8 = true;
  return v;
}

struct provider {
  simd_level level;
  bool (*available)();
  std::vector<dot_kernel> kernels;
};

/// Best path first.
const std::vector<provider>& providers() {
  static const std::vector<provider> all = {
      {simd_level::amx, [] { return host_features().has_amx(); }, amx_kernels()},
      {simd_level::avx512, [] { return host_features().has_avx512_vnni(); }, avx512_kernels()},
      {simd_level::avx2_vnni, [] { return host_features().has_avx2_vnni(); }, avx2_vnni_kernels()},
      {simd_level::avx2, [] { return host_features().has_avx2(); }, avx2_kernels()},
      {simd_level::scalar, [] { return true; }, ref_kernels()},
  };
  return all;
}

}  // namespace

size_t act_row_bytes(act_format act, int64_t k) {
  switch (act) {
    case act_format::f32: return static_cast<size_t>(k) * sizeof(float);
    case act_format::q8x: return static_cast<size_t>(k / 32) * sizeof(block_q8x);
    case act_format::i8_row: return act_i8_row_bytes(k);
    case act_format::i16_row: return act_i16_row_bytes(k);
  }
  return 0;
}

dot_kernel select_dot_kernel(ggml_type type, simd_level max_level) {
  // Never hand out a path the host cannot run, whatever the cap says.
  for (const auto& p : providers()) {
    if (p.level > max_level || !p.available()) continue;
    for (const auto& k : p.kernels)
      if (k.type == type) return k;
  }
  dot_kernel k = ref_kernels().front();  // unknown type: callers check types before asking
  k.type = type;
  return k;
}

}  // namespace fw::cpu
