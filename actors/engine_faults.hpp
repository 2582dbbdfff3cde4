// engine_faults: the fault-injection seam of the actor runtime, for tests only. An engine is
// started with one (engine_options::faults); production code never sets it and no message,
// command or config key reaches it, so a running server cannot be made to fail on purpose.
// Each hook is asked on the worker's own thread at the point it names; it must be thread-safe.
#pragma once

#include <cstdint>
#include <cstddef>
#include <functional>
#include <vector>

namespace fw::actors {

struct engine_faults {
  /// Before the prefill worker runs a request's job: true -> the worker throws (dies).
  std::function<bool(uint64_t request)> crash_prefill;
  /// Before each decode step, on the decode worker's thread (tests may act there, e.g. reload a
  /// plugin between two steps): true -> the decode worker throws (dies).
  std::function<bool()> before_decode_step;
  /// Before the draft actor answers an ask for proposals: true -> the draft actor throws (dies).
  std::function<bool()> crash_draft;
  /// Before a step grows a sequence's KV: true -> that reservation fails (a KV error that
  /// concerns that one sequence).
  std::function<bool(uint64_t request)> fail_kv_reserve;
  /// On the transfer worker, between encoding a request's KV stream and decoding it: may damage
  /// the bytes (flip, truncate) as a faulty link would.
  std::function<void(uint64_t request, std::vector<std::byte>& stream)> damage_kv_stream;
  /// Before the prefill worker of the prefill device (not the co-located fallback) runs a job;
  /// may block for as long as the test likes (a slow or hung device).
  std::function<void(uint64_t request)> stall_prefill;
};

}  // namespace fw::actors
