// fw::errc as a CAF error category ("flywheel"), so an error keeps its kind across actor hops:
// a worker replies caf::error(code, "flywheel", message) and the receiver gets the same errc
// back. CAF's own errors (a dead receiver, a timeout) map to worker_failed / timed_out.
// Thread-safety: pure functions.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/error.hpp>

#include "runtime/base/expected.hpp"

namespace fw::actors {

/// The category atom of flywheel errors.
constexpr caf::atom_value errc_category = caf::atom("flywheel");

/// A CAF error carrying e's kind and message.
caf::error to_caf_error(const error& e);
/// The flywheel error a CAF error stands for (CAF's own: worker_failed or timed_out, rendered).
error from_caf_error(const caf::error& e);
/// Registers the category's renderer (so system.render(err) reads "flywheel: out of memory: ...").
void add_errc_category(caf::actor_system_config& cfg);

}  // namespace fw::actors
