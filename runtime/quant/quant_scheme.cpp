#include "runtime/quant/quant_scheme.hpp"

#include <array>
#include <utility>

namespace fw {
namespace {

constexpr std::array<std::pair<quant_scheme, std::string_view>, 9> names = {{
    {quant_scheme::f32, "f32"},
    {quant_scheme::f16, "f16"},
    {quant_scheme::bf16, "bf16"},
    {quant_scheme::q8_0, "q8_0"},
    {quant_scheme::q4_0, "q4_0"},
    {quant_scheme::q4_1, "q4_1"},
    {quant_scheme::w8a8, "w8a8"},
    {quant_scheme::w4a16, "w4a16"},
    {quant_scheme::mixed, "mixed"},
}};

}  // namespace

std::optional<quant_scheme> scheme_by_name(std::string_view name) {
  for (const auto& [s, n] : names)
    if (n == name) return s;
  return std::nullopt;
}

std::string_view scheme_name(quant_scheme s) {
  for (const auto& [v, n] : names)
    if (v == s) return n;
  return "?";
}

std::string_view scheme_names() { return "f32|f16|bf16|q8_0|q4_0|q4_1|w8a8|w4a16|mixed"; }

bool is_flywheel_scheme(quant_scheme s) {
  return s == quant_scheme::w8a8 || s == quant_scheme::w4a16 || s == quant_scheme::mixed;
}

std::optional<ggml_type> w4a16_type(int group) {
  switch (group) {
    case 32: return ggml_type::fw_w4a16_g32;
    case 64: return ggml_type::fw_w4a16_g64;
    case 128: return ggml_type::fw_w4a16_g128;
    default: return std::nullopt;
  }
}

std::optional<ggml_type> matrix_type(quant_scheme s, int group) {
  switch (s) {
    case quant_scheme::f32: return ggml_type::f32;
    case quant_scheme::f16: return ggml_type::f16;
    case quant_scheme::bf16: return ggml_type::bf16;
    case quant_scheme::q8_0: return ggml_type::q8_0;
    case quant_scheme::q4_0: return ggml_type::q4_0;
    case quant_scheme::q4_1: return ggml_type::q4_1;
    case quant_scheme::w8a8: return ggml_type::fw_w8a8;
    case quant_scheme::w4a16: return w4a16_type(group);
    case quant_scheme::mixed: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<uint32_t> llama_file_type(quant_scheme s) {
  switch (s) {
    case quant_scheme::f32: return 0;
    case quant_scheme::f16: return 1;
    case quant_scheme::q4_0: return 2;
    case quant_scheme::q4_1: return 3;
    case quant_scheme::q8_0: return 7;
    case quant_scheme::bf16: return 32;
    default: return std::nullopt;
  }
}

}  // namespace fw
