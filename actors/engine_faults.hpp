// engine_faults: the fault-injection seam of the actor runtime, for tests only. An engine is
// started with one (engine_options::faults); production code never sets it and no message,
// command or config key reaches it, so a running server cannot be made to fail on purpose.
// Each hook is asked on the worker's own thread at the point it names; it must be thread-safe.
#pragma once

#include <cstdint>
#include <functional>

namespace fw::actors {

struct engine_faults {
  /// Before the prefill worker runs a request's job: true -> the worker throws (dies).
  std::function<bool(uint64_t request)> crash_prefill;
  /// Before each decode step, on the decode worker's thread (tests may act there, e.g. reload a
  /// plugin between two steps): true -> the decode worker throws (dies).
  std::function<bool()> before_decode_step;
  /// Before a step grows a sequence's KV: true -> that reservation fails (a KV error that
  /// concerns that one sequence).
  std::function<bool(uint64_t request)> fail_kv_reserve;
};

}  // namespace fw::actors
