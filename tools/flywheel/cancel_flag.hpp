// cancel_flag: Ctrl-C for long batch commands (quantize, eval). The SIGINT handler only raises
// an atomic flag (async-signal-safe); the command's loops check it between steps and stop
// cleanly (removing partial output). A second Ctrl-C ends the process at once.
// Thread-safety: the flag may be read from any thread.
#pragma once

#include <atomic>

namespace fw::cli {

/// Installs the handler (once) and returns the flag it raises.
const std::atomic<bool>& install_cancel_on_sigint();

}  // namespace fw::cli
