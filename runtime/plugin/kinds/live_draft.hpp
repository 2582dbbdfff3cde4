// live_draft: a drafter that follows a draft_model plugin across reloads. Each sequence runs on
// the plugin object that was current when it began; a sequence that begins after `:reload NAME`
// gets an object from the new version, and an old object (and with it the old library) is
// destroyed when the last sequence on it ends. After `:unload NAME` new sequences decode plainly
// (begin() fails) while those in flight finish. Thread-safety: one caller at a time (a drafter).
#pragma once

#include <memory>
#include <string>

#include "runtime/base/expected.hpp"
#include "runtime/plugin/plugin_draft.hpp"
#include "runtime/plugin/plugin_host.hpp"

namespace fw {

/// Creates the first object from the host's current version of `name` (an error when none).
expected<std::unique_ptr<drafter>> make_live_draft(std::shared_ptr<plugin_host> host, const std::string& name,
                                                   const draft_options& options);

}  // namespace fw
