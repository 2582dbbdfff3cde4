// route_policy: the global level of the two-level scheduler, as pure code (no clock, no actors):
// where a newly admitted request is prefilled when the engine has a prefill device and a decode
// device. Physical separation (prefill on its device, KV moved to the decode device) unless the
// prefill device is down, its pool cannot hold the prompt, or the work already queued there
// (at the prefill rate measured so far) would keep this prompt waiting past its deadline: then the
// request is prefilled co-located, on the decode device. prefill_overdue is the per-request
// deadline check the scheduler runs on its timer (a stalled prefill device fails over instead of
// failing the request). Tested with fabricated inputs. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace fw {

enum class prefill_route : uint8_t { co_located, physical };

struct route_inputs {
  bool separate_devices = false;      ///< a prefill device besides the decode device
  bool prefill_device_up = true;      ///< its worker is running
  uint32_t prompt_blocks = 0;         ///< KV blocks the prompt needs on the prefill device
  uint32_t prefill_free_blocks = 0;   ///< free there now
  uint64_t queued_tokens = 0;         ///< prompt tokens already waiting for / in the prefill device
  uint32_t prompt_tokens = 0;         ///< this prompt's tokens to prefill
  double prefill_tokens_per_s = 0;    ///< measured on the prefill device; 0: not measured yet
  double deadline_s = 3.0;            ///< a prompt not prefilled this long after admission fails over
};

struct route_decision {
  prefill_route route = prefill_route::co_located;
  std::string reason;  ///< why, for logs and :devices
};

route_decision choose_route(const route_inputs& in);

/// A prefill admitted at admitted_s is past its deadline at now_s (deadline_s <= 0 or infinite:
/// never).
bool prefill_overdue(double admitted_s, double now_s, double deadline_s);

/// The same for a prompt the prefill device is computing now (started at started_s): a slow but
/// progressing prompt gets twice its expected time at the measured rate (rate 0: unknown) before it
/// counts as stalled, never less than the deadline. Restarting a long prompt elsewhere would only
/// waste what was done.
bool running_prefill_overdue(double started_s, uint32_t prompt_tokens, double rate_tokens_per_s, double now_s,
                             double deadline_s);

/// Exponential moving average of a throughput: the new estimate after one observation of
/// `tokens` in `seconds` (prev 0: the observation itself).
double update_rate(double prev, double tokens, double seconds, double weight = 0.3);

}  // namespace fw
