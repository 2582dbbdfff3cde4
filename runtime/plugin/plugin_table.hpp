// plugin_table: the checks a plugin's entry table (the fw_plugin_v1 its fw_plugin_entry returns,
// include/flywheel/plugin_sdk.h) must pass before the host uses it, and the weight types a
// quant_kernel table lists. Pure functions of the table's fields: no loading, so the fuzz target
// tests/fuzz/fuzz_plugin_table.cpp feeds them tables made from arbitrary bytes.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "include/flywheel/plugin_sdk.h"

namespace fw {

/// The most weight types a quant_kernel table may list (GGUF has fewer than 64): a longer list is
/// refused as a corrupt table rather than read.
inline constexpr size_t max_plugin_types = 256;

/// Why the table cannot be used (empty: it can): the ABI version, a known kind, a name, a
/// version, create() and destroy(), the kind's table with the functions its kind requires, and
/// for a quant_kernel a list of 1..max_plugin_types weight types.
std::string plugin_table_problem(const fw_plugin_v1& t);

/// The weight types a quant_kernel table (v1 or v2) lists; none for other kinds. Only for a table
/// plugin_table_problem accepted.
std::vector<uint32_t> plugin_table_types(const fw_plugin_v1& t);

}  // namespace fw
