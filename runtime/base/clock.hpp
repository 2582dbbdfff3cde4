// clock_fn: the time a pure component is given instead of reading a clock itself: monotonic
// seconds (any origin). Production passes steady_seconds; tests pass a fake they advance by hand.
// Thread-safety: steady_seconds is safe anywhere; a fake is as safe as the test makes it.
#pragma once

#include <chrono>
#include <functional>

namespace fw {

using clock_fn = std::function<double()>;

/// Seconds on the steady clock (the origin is unspecified; only differences mean anything).
inline double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace fw
