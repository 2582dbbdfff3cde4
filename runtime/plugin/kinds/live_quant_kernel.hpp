// live_quant_kernel: a quant_kernel that follows its plugin across reloads. The backend holds
// one for each [compute] kernel_plugins name and calls begin_step() before every forward pass;
// when the host has a newer version of the plugin (`:reload NAME`), the next step creates an
// object from it and drops the old one, so a rebuilt kernel serves from the next step on and
// the old library closes once nothing uses it. A new version that handles other weight types
// than the first is refused (the backend planned its packing by those types): the old one keeps
// serving and the refusal is logged. After `:unload NAME` the last version keeps serving.
// Thread-safety: begin_step() and the kernel calls may come from any thread; a swap is atomic
// and a call in progress finishes on the object it started with.
#pragma once

#include <memory>
#include <string>

#include "runtime/base/expected.hpp"
#include "runtime/device/quant_kernel.hpp"
#include "runtime/plugin/plugin_host.hpp"

namespace fw {

/// Creates the first object from the host's current version of `name`.
expected<std::shared_ptr<quant_kernel>> make_live_quant_kernel(std::shared_ptr<plugin_host> host,
                                                               const std::string& name,
                                                               const std::string& params_json = "{}");

}  // namespace fw
