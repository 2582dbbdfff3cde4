#include "kernels/format/ggml_type.hpp"

#include <array>

#include "kernels/format/fw_formats.hpp"
#include "kernels/format/quant_ref.hpp"

namespace fw {
namespace {

// One entry per format: a new format is one line here and its converters in quant_ref.cpp.
void w8a8_to_float(const void* src, float* dst, int64_t n) { fw_format::dequantize_w8_row(src, dst, n); }
void w8a8_from_float(const float* src, void* dst, int64_t n) { fw_format::quantize_w8_row(src, dst, n); }

const std::array<ggml_type_traits, 10>& table() {
  using namespace fw_format;
  static constexpr std::array<ggml_type_traits, 10> known = {{
    {ggml_type::f32, "f32", 1, 4, format_ref::f32_to_float, format_ref::f32_from_float},
    {ggml_type::f16, "f16", 1, 2, format_ref::f16_to_float, format_ref::f16_from_float},
    {ggml_type::q4_0, "q4_0", 32, sizeof(block_q4_0), format_ref::q4_0_to_float, format_ref::q4_0_from_float},
    {ggml_type::q4_1, "q4_1", 32, sizeof(block_q4_1), format_ref::q4_1_to_float, format_ref::q4_1_from_float},
    {ggml_type::q8_0, "q8_0", 32, sizeof(block_q8_0), format_ref::q8_0_to_float, format_ref::q8_0_from_float},
    {ggml_type::bf16, "bf16", 1, 2, format_ref::bf16_to_float, format_ref::bf16_from_float},
    {ggml_type::fw_w8a8, "fw_w8a8", 32, 32, w8a8_to_float, w8a8_from_float, sizeof(w8_row_header), true},
    {ggml_type::fw_w4a16_g32, "fw_w4a16_g32", 32, w4_group_bytes(32), w4_to_float<32>, w4_from_float<32>, 0, true},
    {ggml_type::fw_w4a16_g64, "fw_w4a16_g64", 64, w4_group_bytes(64), w4_to_float<64>, w4_from_float<64>, 0, true},
    {ggml_type::fw_w4a16_g128, "fw_w4a16_g128", 128, w4_group_bytes(128), w4_to_float<128>, w4_from_float<128>, 0, true},
  }};
  return known;
}

}  // namespace

std::optional<ggml_type_traits> type_traits(uint32_t raw_type) {
  for (const auto& t : table())
    if (static_cast<uint32_t>(t.type) == raw_type) return t;
  return std::nullopt;
}

ggml_type_traits type_traits(ggml_type type) { return *type_traits(static_cast<uint32_t>(type)); }

std::span<const ggml_type_traits> known_types() { return table(); }

std::optional<ggml_type> type_by_name(std::string_view name) {
  for (const auto& t : table())
    if (t.name == name) return t.type;
  return std::nullopt;
}

std::string_view ggml_type_name(uint32_t raw_type) {
  static constexpr std::array<std::string_view, 40> names = {
      "f32",  "f16",  "q4_0", "q4_1", "q4_2(removed)", "q4_3(removed)", "q5_0", "q5_1",
      "q8_0", "q8_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k", "iq2_xxs", "iq2_xs",
      "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s", "iq2_s", "iq4_xs", "i8", "i16", "i32", "i64",
      "f64", "iq1_m", "bf16", "q4_0_4_4(removed)", "q4_0_4_8(removed)", "q4_0_8_8(removed)",
      "tq1_0", "tq2_0", "iq4_nl_4_4(removed)", "iq4_nl_4_8(removed)", "iq4_nl_8_8(removed)",
      "mxfp4"};
  if (is_fw_type_id(raw_type)) {
    if (auto t = type_traits(raw_type)) return t->name;
    return "fw_unknown";
  }
  return raw_type < names.size() ? names[raw_type] : std::string_view("unknown");
}

}  // namespace fw
