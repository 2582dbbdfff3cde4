// rollout_breaker: staged rollout of the levers with an automatic circuit breaker, as pure code
// (no clock, no actors: callers pass the time). Stages: 1 quantization only, 2 + speculation,
// 3 + logical prefill/decode separation, 4 + physical separation and CPU offload. While stage S
// rolls out, shares[S-1] of the requests are served with stage S's levers and the rest with stage
// S-1's (assign(): by a hash of the request id, so the split is stable). Each stage keeps its
// last `window` outcomes; once the new stage has min_requests of them it is judged against the
// previous stage: its P99 per-token latency more than p99_ratio times the previous stage's,
// errors above max_error_rate, or draft failures (draft proposals that errored / proposals asked)
// above max_draft_failure trip the breaker: back one stage, and no advance for cooldown_s. A stage that
// passes advance_after requests in a row advances to the next. Every decision is kept with its
// reason. Tested with fabricated outcome streams (tests/runtime/supervise/rollout_breaker_test.cpp).
// Thread-safety: none; one owner (the scheduler actor).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace fw {

struct rollout_limits {
  std::array<double, 4> shares{0.10, 0.30, 0.70, 1.00};  ///< traffic on stage S while it rolls out
  uint32_t start_stage = 1;
  double p99_ratio = 1.2;          ///< new stage's P99 over the previous stage's above this trips
  double max_error_rate = 0.005;
  double max_draft_failure = 0.15;
  uint32_t min_requests = 20;      ///< outcomes of the new stage before it is judged
  uint32_t advance_after = 50;     ///< judged healthy this many times: next stage
  uint32_t window = 200;           ///< outcomes kept per stage
  double cooldown_s = 60;          ///< after a trip, no advance for this long
};

struct rollout_outcome {
  double per_token_s = 0;     ///< request latency / generated tokens
  bool error = false;
  uint32_t proposals = 0, draft_failures = 0;  ///< draft proposals asked for it, and that errored
};

struct rollout_decision {
  double t_s = 0;
  uint32_t from = 0, to = 0;
  std::string reason;
};

/// What one stage has served (its window).
struct rollout_stage_stats {
  uint64_t requests = 0;  ///< in the window
  double p99_per_token_s = 0;
  double error_rate = 0;
  double draft_failure = 0;
};

class rollout_breaker {
 public:
  explicit rollout_breaker(rollout_limits limits = {});

  /// The stage (1..4) a request is served with.
  [[nodiscard]] uint32_t assign(uint64_t request_id) const;
  /// A request served with `stage` ended; may advance or trip (true: the stage changed).
  bool record(uint32_t stage, const rollout_outcome& o, double now_s);

  [[nodiscard]] uint32_t stage() const { return stage_; }
  [[nodiscard]] rollout_stage_stats stats(uint32_t stage) const;
  [[nodiscard]] const std::vector<rollout_decision>& decisions() const { return decisions_; }
  [[nodiscard]] const rollout_limits& limits() const { return limits_; }

 private:
  void move_to(uint32_t to, double now_s, std::string why);

  rollout_limits limits_;
  uint32_t stage_ = 1;
  std::array<std::deque<rollout_outcome>, 5> outcomes_{};  ///< index = stage
  uint32_t healthy_run_ = 0;
  double cooldown_until_ = -1;
  std::vector<rollout_decision> decisions_;
};

/// "quantization", "+ speculation", "+ logical PD", "+ physical PD and offload".
const char* rollout_stage_name(uint32_t stage);

}  // namespace fw
