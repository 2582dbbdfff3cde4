// plugin_adapters: the C++ objects the engine holds (draft_plugin, quant_kernel) over a
// plugin's C function tables. Each adapter owns one plugin object (destroy() in its destructor)
// and a shared_ptr to its plugin_library, so the library stays loaded while the object lives.
// The adapters' code and vtables live in the host, never in the plugin, so destroying the last
// adapter may safely dlclose the library. Every call into the plugin is guarded by try/catch.
// Thread-safety: as the interfaces they implement.
#pragma once

#include <memory>
#include <string>

#include "runtime/base/expected.hpp"
#include "runtime/plugin/plugin_draft.hpp"
#include "runtime/plugin/plugin_library.hpp"
#include "runtime/device/quant_kernel.hpp"
#include "runtime/supervise/telemetry_feed.hpp"

namespace fw {

/// Creates a plugin object from lib (a draft_model library) and wraps it.
expected<std::shared_ptr<draft_plugin>> make_draft_plugin(std::shared_ptr<plugin_library> lib,
                                                          const draft_options& options);

/// Creates a plugin object from lib (a quant_kernel library) and wraps it.
expected<std::shared_ptr<quant_kernel>> make_quant_kernel(
    std::shared_ptr<plugin_library> lib, const std::string& params_json);

/// Creates a plugin object from lib (a telemetry_source library) and wraps it.
expected<std::shared_ptr<telemetry_feed>> make_telemetry_source(std::shared_ptr<plugin_library> lib,
                                                               const std::string& params_json);

}  // namespace fw
