// scheduler_actor: admission and placement, as a thin adapter over runtime/sched's
// request_table (the request state machine) and the device's KV pool: it allocates each admitted
// request's KV (worst case, so decode never runs out), sends prefill jobs and decode jobs, and
// turns the table's decisions into messages. On a worker crash it frees the dead worker's KV by
// epoch and fails (decode) or re-queues (prefill, innocent requests) what it held; no request
// hangs, and none is lost to a crash: the decode workers report every token they produce, and a
// request whose decode worker died is re-admitted from prompt + those tokens (its KV is
// recomputed; the client sees neither an error nor a repeated token). While a worker is being
// restarted (the supervisor says lost_atom at once, worker_atom when its replacement runs)
// decode jobs wait here. With [kv_cache] prefix_cache it keeps each prompt's whole KV blocks after its prefill
// and copies the longest cached prefix into a new request's blocks, which then prefills only the
// rest; the cache yields its blocks when admission would otherwise stall. With separate prefill
// and decode devices it routes each request (runtime/sched/route_policy): prefill on the prefill
// device, then the transfer worker moves the KV (kv_codec) into the decode reservation; or
// co-located, on the decode device's fallback prefill worker, when the prefill device is down,
// full or too far behind, when a prefill passes its deadline, or when a KV stream is refused
// (the prompt is recomputed, the request is not lost). The prefix cache lives on the prefill pool. Protocol:
// actors/protocol/scheduler_protocol.hpp.
#pragma once

#include <caf/typed_event_based_actor.hpp>

#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "actors/engine_context.hpp"
#include "actors/protocol/front_door_protocol.hpp"
#include "actors/protocol/scheduler_protocol.hpp"
#include "runtime/kv/prefix_cache.hpp"
#include "runtime/sched/decode_time_predictor.hpp"
#include "runtime/sched/request_table.hpp"
#include "runtime/supervise/degradation_policy.hpp"

namespace fw::actors {

/// A request routed to the prefill device (physical separation), between admission and its
/// decode job.
struct staged_request {
  kv_handle decode_kv;            ///< reserved in the decode pool (worst case) until handed on
  uint32_t prefill_epoch = 0;     ///< its prefill-pool allocation (release on a lost worker)
  uint32_t prompt_tokens = 0;     ///< tokens the prefill device computes
  double admitted_s = 0;
  bool on_prefill_device = false; ///< its job there has not replied yet
  bool failed_over = false;       ///< prefilled co-located instead (deadline or a device error)
  float attention_entropy = -1;   ///< from the prefill, for the decode job
  double prefilled_s = 0;
};

struct pd_counters {
  uint64_t transfers = 0, bytes = 0, f32_bytes = 0, refused = 0, failovers = 0;
  uint64_t co_located = 0, physical = 0;
  double transfer_s = 0;
  double prefill_rate = 0;  ///< tokens/s on the prefill device (moving average)
  double last_reply_s = 0;  ///< when the prefill device last finished a job
  std::string last_reason;
};

struct scheduler_state {
  // CAF constructs a state from the actor pointer when it can; with C++20 aggregate
  // parenthesized init that would turn the pointer into the first member. Take it explicitly.
  explicit scheduler_state(caf::local_actor*) {}
  /// The cache's blocks go back to the pool when the scheduler ends (engine shutdown; the
  /// engine awaits its actors before it destroys the device).
  ~scheduler_state() {
    if (pool)
      for (auto& h : cache.evict_all()) (void)pool->release(h);
  }
  scheduler_state(const scheduler_state&) = delete;
  scheduler_state& operator=(const scheduler_state&) = delete;

  request_table table{scheduler_limits{}};
  /// A request the scheduler knows: what it asked for and how far it got.
  struct held_request {
    client_request req;
    /// Tokens its decode worker has produced (and the client been sent): a request whose worker
    /// dies is re-admitted from prompt + these and carries on after them.
    std::vector<int32_t> generated;
    uint32_t retries = 0;  ///< prefills of it that killed their worker
    uint32_t stage = 4;    ///< its rollout stage: the levers it is served with
    double submitted_s = 0;
    uint32_t proposals = 0, draft_failures = 0;  ///< draft proposals asked for it, and that errored
  };
  std::unordered_map<uint64_t, held_request> requests;
  /// Decode jobs ready while no decode worker runs (it died; its replacement is pending).
  std::vector<decode_job> parked;
  std::vector<sequence_box> parked_boxes;  ///< running sequences coming back to the decode device then
  front_door_actor front_door;
  prefill_actor prefill;   ///< on the prefill device (the only one when co-located)
  prefill_actor fallback;  ///< separate devices: prefill on the decode device (co-located route)
  transfer_actor transfer; ///< separate devices: moves KV between the pools
  decode_actor decode;
  decode_actor offload;    ///< with an offload device: its decode worker
  /// Sequences moving to the offload device: held here while their KV is transferred.
  struct in_transit {
    sequence_box box;
    uint32_t to_epoch = 0;   ///< the offload-pool allocation the transfer writes
    bool cancelled = false;
  };
  std::unordered_map<uint64_t, in_transit> transit;
  std::unordered_set<uint64_t> offloaded;  ///< decoding on the offload device now
  uint64_t offloaded_total = 0, offload_refused = 0;
  /// Separate devices: requests routed to the prefill device, from admission to their decode job.
  std::unordered_map<uint64_t, staged_request> staged;
  pd_counters pd;
  uint8_t degradation = 0;  ///< runtime/supervise degradation_state, set by the supervisor
  std::optional<rollout_breaker> rollout;  ///< [rollout] enabled
  decode_time_predictor predictor;         ///< t = a*L + b*N of the decode device's steps
  bool admission_held = false;             ///< the predictor held a request back (retry after a step)
  uint64_t admission_holds = 0;
  std::string degradation_reason;
  /// How long scheduling decisions took (admission passes, routes), the last decision_window.
  static constexpr size_t decision_window = 8192;
  std::vector<float> decision_us;
  uint64_t decisions = 0;
  uint64_t prefill_chunks = 0, prefill_chunk_rows = 0;  ///< forwards of finished prefills, and their rows
  uint64_t worker_restarts = 0;
  uint64_t rejected = 0;  ///< requests refused before they entered the table
  prefix_cache cache{16, 0};  ///< earlier prompts' KV blocks (owned here: the pool's one owner)
  uint64_t tick = 0;          ///< the cache's recency clock (one per admission)
  kv_block_pool* pool = nullptr;  ///< the prefill device's pool (the cache's blocks' home)
  static inline const char* name = "fw.scheduler";
};

scheduler_actor::behavior_type scheduler(scheduler_actor::stateful_pointer<scheduler_state> self,
                                         const engine_context* ctx, front_door_actor front_door);

}  // namespace fw::actors
