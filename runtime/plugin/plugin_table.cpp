#include "runtime/plugin/plugin_table.hpp"

namespace fw {

std::string plugin_table_problem(const fw_plugin_v1& t) {
  if (t.abi_version != FW_PLUGIN_ABI_VERSION)
    return "plugin ABI version " + std::to_string(t.abi_version) + ", but this host speaks version " +
           std::to_string(FW_PLUGIN_ABI_VERSION) + " (rebuild the plugin against this plugin_sdk.h)";
  if (t.kind != FW_PLUGIN_QUANT_KERNEL && t.kind != FW_PLUGIN_DRAFT_MODEL && t.kind != FW_PLUGIN_QUANT_KERNEL_V2 &&
      t.kind != FW_PLUGIN_TELEMETRY_SOURCE)
    return "unknown plugin kind " + std::to_string(t.kind) +
           " (known: 1 quant_kernel, 2 draft_model, 3 quant_kernel v2, 4 telemetry_source)";
  if (!t.name || !*t.name) return "the entry table has no name";
  if (!t.version) return "the entry table has no version";
  if (!t.create) return "the entry table has no create()";
  if (!t.destroy) return "the entry table has no destroy()";
  if (!t.kind_table)
    return std::string("the entry table has no ") +
           (t.kind == FW_PLUGIN_DRAFT_MODEL       ? "draft_model"
            : t.kind == FW_PLUGIN_TELEMETRY_SOURCE ? "telemetry_source"
                                                   : "quant_kernel") +
           " table";
  if (t.kind == FW_PLUGIN_QUANT_KERNEL_V2) {
    const auto& q = *static_cast<const fw_quant_kernel_v2*>(t.kind_table);
    if (!q.types || q.n_types == 0) return "the quant_kernel v2 table lists no weight types";
    if (q.n_types > max_plugin_types)
      return "the quant_kernel v2 table lists " + std::to_string(q.n_types) + " weight types (at most " +
             std::to_string(max_plugin_types) + ": a corrupt table?)";
    if (!q.act_format || !q.quantize_act || !q.gemm)
      return "the quant_kernel v2 table lacks act_format(), quantize_act() or gemm()";
  } else if (t.kind == FW_PLUGIN_QUANT_KERNEL) {
    const auto& q = *static_cast<const fw_quant_kernel_v1*>(t.kind_table);
    if (!q.types || q.n_types == 0) return "the quant_kernel table lists no weight types";
    if (q.n_types > max_plugin_types)
      return "the quant_kernel table lists " + std::to_string(q.n_types) + " weight types (at most " +
             std::to_string(max_plugin_types) + ": a corrupt table?)";
    if (!q.gemv) return "the quant_kernel table has no gemv()";
  } else if (t.kind == FW_PLUGIN_TELEMETRY_SOURCE) {
    if (!static_cast<const fw_telemetry_source_v1*>(t.kind_table)->sample)
      return "the telemetry_source table has no sample()";
  } else {
    const auto& d = *static_cast<const fw_draft_model_v1*>(t.kind_table);
    if (!d.begin || !d.propose || !d.accept || !d.end)
      return "the draft_model table lacks begin(), propose(), accept() or end()";
  }
  return {};
}


std::vector<uint32_t> plugin_table_types(const fw_plugin_v1& t) {
  if (t.kind == FW_PLUGIN_QUANT_KERNEL_V2) {
    const auto& q = *static_cast<const fw_quant_kernel_v2*>(t.kind_table);
    return std::vector<uint32_t>(q.types, q.types + q.n_types);
  }
  if (t.kind == FW_PLUGIN_QUANT_KERNEL) {
    const auto& q = *static_cast<const fw_quant_kernel_v1*>(t.kind_table);
    return std::vector<uint32_t>(q.types, q.types + q.n_types);
  }
  return {};
}

}  // namespace fw
