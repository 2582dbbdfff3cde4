// libFuzzer target: a plugin's metadata. The entry table a plugin hands the host (plugin_sdk.h's
// fw_plugin_v1 and its kind's table) is made from arbitrary bytes: the ABI version, the kind, the
// name and version strings, which functions are set, the weight-type list and the length it
// claims. (The bytes never become code: the functions are never called.) What must hold:
//   - a table plugin_table_problem accepts has everything its kind requires, and for a
//     quant_kernel a list of 1..max_plugin_types types that plugin_table_types reads whole (a
//     longer claimed length is refused, never read);
//   - the registry row made from the table's strings (`flywheel plugins`, GET /admin/plugins) is
//     valid JSON that gives the same strings back when they are valid UTF-8.
#include <fuzzer/FuzzedDataProvider.h>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/plugin/plugin_info.hpp"
#include "runtime/plugin/plugin_table.hpp"

namespace {

// Stand-ins for the plugin's functions: only whether a pointer is set matters to the checks.
int probe_fn(char*, size_t) { return 0; }
void* create_fn(const char*, char*, size_t) { return nullptr; }
void destroy_fn(void*) {}
int gemv_fn(void*, uint32_t, const void*, size_t, int64_t, int64_t, const float*, int64_t, float*) { return 0; }
int act_format_fn(void*, uint32_t, int64_t, uint32_t*, size_t*) { return 0; }
int quantize_act_fn(void*, uint32_t, const float*, int64_t, float, void*) { return 0; }
int gemm_fn(void*, uint32_t, const void*, size_t, int64_t, int64_t, const void*, size_t, int64_t, float*, int64_t) {
  return 0;
}
int begin_fn(void*, uint64_t, const int32_t*, size_t, const fw_sampling_v1*) { return 0; }
int propose_fn(void*, uint64_t, const int32_t*, size_t, int32_t, int32_t*, float*, int32_t) { return 0; }
int accept_fn(void*, uint64_t, const int32_t*, size_t) { return 0; }
void end_fn(void*, uint64_t) {}
int sample_fn(void*, fw_telemetry_sample_v1*, size_t) { return 0; }

/// Whether the registry row of these strings is valid JSON with the same strings back.
void check_row(const std::string& name, const std::string& version, const std::string& error, bool valid_text) {
  fw::plugin_info info;
  info.name = name;
  info.version = version;
  info.file = "plugins/" + name + ".so";
  info.error = error;
  (void)info.to_line();
  const auto j = nlohmann::json::parse(fw::to_json({info}), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array() || j.size() != 1) __builtin_trap();
  if (valid_text && (j[0]["name"] != name || j[0]["version"] != version || (!error.empty() && j[0]["error"] != error)))
    __builtin_trap();
}

/// Whether s is valid UTF-8 (nlohmann's strict serializer refuses anything else).
bool valid_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  fw_plugin_v1 t{};
  t.abi_version = in.ConsumeBool() ? FW_PLUGIN_ABI_VERSION : in.ConsumeIntegral<uint32_t>();
  t.kind = in.ConsumeIntegralInRange<uint32_t>(0, 6);
  const std::string name = in.ConsumeRandomLengthString(64);
  const std::string version = in.ConsumeRandomLengthString(64);
  const uint8_t set = in.ConsumeIntegral<uint8_t>();  // which pointers are set, one bit each
  const uint8_t set_kind = in.ConsumeIntegral<uint8_t>();
  t.name = set & 1 ? name.c_str() : nullptr;
  t.version = set & 2 ? version.c_str() : nullptr;
  t.probe = set & 4 ? probe_fn : nullptr;
  t.create = set & 8 ? create_fn : nullptr;
  t.destroy = set & 16 ? destroy_fn : nullptr;
  const bool has_kind_table = set & 32;

  // The weight types: the length claimed, and an array that holds that many when it is small.
  const bool lies = in.ConsumeBool();
  size_t claimed = lies ? in.ConsumeIntegral<size_t>() : in.ConsumeIntegralInRange<size_t>(0, 2 * fw::max_plugin_types);
  std::vector<uint32_t> types(claimed <= 4 * fw::max_plugin_types ? claimed : 1);
  for (auto& x : types) x = in.ConsumeIntegral<uint32_t>();
  const uint32_t* types_ptr = set_kind & 64 ? nullptr : types.data();

  fw_quant_kernel_v1 q1{};
  q1.types = types_ptr, q1.n_types = claimed;
  q1.gemv = set_kind & 1 ? gemv_fn : nullptr;
  fw_quant_kernel_v2 q2{};
  q2.types = types_ptr, q2.n_types = claimed;
  q2.act_format = set_kind & 1 ? act_format_fn : nullptr;
  q2.quantize_act = set_kind & 2 ? quantize_act_fn : nullptr;
  q2.gemm = set_kind & 4 ? gemm_fn : nullptr;
  fw_draft_model_v1 d{};
  d.begin = set_kind & 1 ? begin_fn : nullptr;
  d.propose = set_kind & 2 ? propose_fn : nullptr;
  d.accept = set_kind & 4 ? accept_fn : nullptr;
  d.end = set_kind & 8 ? end_fn : nullptr;
  fw_telemetry_source_v1 ts{};
  ts.sample = set_kind & 1 ? sample_fn : nullptr;
  if (has_kind_table) {
    switch (t.kind) {
      case FW_PLUGIN_QUANT_KERNEL: t.kind_table = &q1; break;
      case FW_PLUGIN_QUANT_KERNEL_V2: t.kind_table = &q2; break;
      case FW_PLUGIN_DRAFT_MODEL: t.kind_table = &d; break;
      case FW_PLUGIN_TELEMETRY_SOURCE: t.kind_table = &ts; break;
      default: t.kind_table = &q1; break;  // an unknown kind with some table
    }
  }

  const std::string problem = fw::plugin_table_problem(t);
  if (problem.empty()) {
    // Accepted: everything the host will use is there.
    if (t.abi_version != FW_PLUGIN_ABI_VERSION || !t.name || !*t.name || !t.version || !t.create || !t.destroy ||
        !t.kind_table)
      __builtin_trap();
    const bool kernel = t.kind == FW_PLUGIN_QUANT_KERNEL || t.kind == FW_PLUGIN_QUANT_KERNEL_V2;
    if (!kernel && t.kind != FW_PLUGIN_DRAFT_MODEL && t.kind != FW_PLUGIN_TELEMETRY_SOURCE) __builtin_trap();
    const auto listed = fw::plugin_table_types(t);
    if (kernel && (claimed == 0 || claimed > fw::max_plugin_types || listed.size() != claimed)) __builtin_trap();
    if (kernel && listed != std::vector<uint32_t>(types.begin(), types.begin() + static_cast<std::ptrdiff_t>(claimed)))
      __builtin_trap();
    if (!kernel && !listed.empty()) __builtin_trap();
  }
  check_row(name, version, problem, valid_utf8(name) && valid_utf8(version));
  return 0;
}
