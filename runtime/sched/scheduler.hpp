// scheduler: the request state machine of one engine, as pure code (the model: vLLM v1's
// Scheduler). Every request's phase lives here and nowhere else: waiting, prefilling (co-located),
// staged (on the prefill device of a physical pair), transferring, decoding, parked (its decode
// worker is being restarted), offloading (its KV moving to the offload device), offloaded. It is
// the only writer of every pool's block book: it allocates each admitted request's worst case,
// copies cached prefixes, releases what finished, failed, was cancelled or died with a worker.
//
// Events in (one method each: a request, a cancel, a prefill or transfer reply or failure, a
// decode worker's step report, finished or failed sequences, an offload hand-over, a worker up
// or lost, a degradation state, a tick), actions out (scheduler_actions.hpp: run a prefill, run a
// transfer, start or adopt a decode, cancel one, fail a request). Each decision goes through the
// pure policies: request_table (admission FIFO, worst-case KV, timeouts), route_policy (physical
// or co-located prefill, deadlines), decode_time_predictor (admission_tpot), prefix_cache,
// rollout_breaker (stages), degradation_state (routes and KV wire).
//
// No threads, no actors, no clock but the one it is given (setup::clock). The scheduler actor
// (actors/scheduler_actor) only turns messages into these calls and the actions into messages.
// Thread-safety: none; one owner. The pools it is given must outlive it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/base/clock.hpp"
#include "runtime/kv/kv_block_pool.hpp"
#include "runtime/kv/prefix_cache.hpp"
#include "runtime/sched/decode_time_predictor.hpp"
#include "runtime/sched/offload_policy.hpp"
#include "runtime/sched/request_table.hpp"
#include "runtime/sched/route_policy.hpp"
#include "runtime/sched/scheduler_actions.hpp"
#include "runtime/sched/scheduler_stats.hpp"
#include "runtime/sched/worker_messages.hpp"
#include "runtime/supervise/rollout_breaker.hpp"

namespace fw {

/// Where a request is, in full (request_table's three phases refined by the route it took).
enum class request_stage : uint8_t {
  unknown,       ///< not held (never submitted, or done)
  waiting,       ///< queued for admission
  prefilling,    ///< its prompt runs on the decode device's pool (co-located or failed over)
  staged,        ///< its prompt runs on the prefill device; a decode reservation waits for it
  transferring,  ///< its KV moves from the prefill device to the decode device
  decoding,      ///< in the decode worker's batch
  parked,        ///< ready to decode while the decode worker is being restarted
  offloading,    ///< its KV moves to the offload device
  offloaded,     ///< decoding on the offload device
};
const char* to_string(request_stage s);

class scheduler {
 public:
  /// What one engine's scheduler is built from (runtime/setup, engine_limits, the model).
  struct setup {
    kv_block_pool* decode_pool = nullptr;   ///< the decode device's pool (required)
    kv_block_pool* prefill_pool = nullptr;  ///< the prefill device's; null or == decode_pool: co-located
    kv_block_pool* offload_pool = nullptr;  ///< the offload device's; null: none
    uint32_t n_vocab = 0, n_ctx = 0, n_layer = 0;
    uint32_t max_batch = 16, max_queue = 256;
    double request_timeout_s = 600;
    double prefill_deadline_s = 3.0;   ///< separate devices: a prefill later than this fails over
    uint32_t request_retries = 2;      ///< prefills of one request that may kill their worker
    double admission_tpot_s = 0;       ///< [scheduler] admission_tpot_ms in seconds; 0: off
    uint32_t prefix_cache_blocks = 0;  ///< 0: no prefix cache
    /// One device ([scheduler] prefill_order = "shortest"): its prefill worker gets one slice of
    /// at most prefill_slice tokens at a time, of the prompt with the least work left
    /// (prefill_order), so a short prompt waits behind one slice of a long one, not its whole
    /// prefill; a prompt waiting prefill_max_wait_s goes first. false: whole prompts, FIFO.
    bool prefill_shortest_first = false;
    uint32_t prefill_slice = 512;
    double prefill_max_wait_s = 2.0;
    std::optional<uint8_t> degraded_kv_wire;  ///< the KV wire over a degraded link; unset: as configured
    std::optional<rollout_limits> rollout;    ///< [rollout] enabled
    offload_limits offload{};                 ///< with an offload pool: which long tails move
    clock_fn clock = steady_seconds;          ///< monotonic seconds
  };

  explicit scheduler(setup s);
  /// The prefix cache's blocks go back to their pool.
  ~scheduler();
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  // -- events: each returns what the engine must do now --

  /// A new request: refused at once (fail_request) or queued and perhaps admitted.
  scheduler_actions submit(client_request req);
  scheduler_actions cancel(uint64_t id);
  /// A run_prefill's reply (worker and generation as in the action).
  scheduler_actions prefill_finished(worker_kind worker, prefill_done d);
  /// A run_prefill failed: an error reply, or its worker died (receiver_down).
  scheduler_actions prefill_failed(uint64_t id, worker_kind worker, uint64_t generation, bool receiver_down, error e);
  /// A run_transfer's reply (t.error set: the stream was refused; the handles came back).
  scheduler_actions transfer_finished(transfer_done t);
  /// A run_transfer failed: its worker died with the job (both handles are released by epoch).
  scheduler_actions transfer_failed(uint64_t id, bool receiver_down, error e);
  /// The decode worker hands over a long-tail sequence (offload_policy): its id, its KV in the
  /// decode pool, the tokens it may still generate, and the sequence itself.
  scheduler_actions offload_requested(uint64_t id, kv_handle kv, uint32_t remaining, carried_sequence seq);
  /// A decode worker finished (or, cancelled, dropped) these and hands their KV back: the prefix
  /// cache keeps whole blocks, the rest is released (the workers never free KV themselves).
  scheduler_actions finished(finished_ids f);
  /// A decode worker failed these and hands their KV back (released here).
  scheduler_actions decode_failed(const sequence_failures& f);
  /// A decode worker produced these tokens (before the client gets them). After a step of the
  /// decode device (step_s > 0) the decode-time model learns from it (admission_tpot) and
  /// offload_policy may pick long tails for the offload device (hand_over).
  scheduler_actions progress(const step_tokens& t);
  /// A worker of this kind runs (restarted: it replaces one that died).
  scheduler_actions worker_up(worker_kind worker, bool restarted);
  /// A worker died (its replacement comes as worker_up later): what it held is re-admitted or
  /// re-routed, none of it lost.
  scheduler_actions worker_lost(worker_kind worker, const std::string& reason);
  /// The supervisor's degradation_state: new routes and transfers follow it; at cpu_fallback the
  /// prompts still on the prefill device move to the decode device now.
  scheduler_actions degrade(uint8_t state, std::string why);
  /// The timer: prefill deadlines and request timeouts.
  scheduler_actions tick();

  // -- queries --

  [[nodiscard]] request_stage stage_of(uint64_t id) const;
  [[nodiscard]] bool worker_running(worker_kind w) const { return workers_[index(w)].up; }
  [[nodiscard]] uint64_t generation(worker_kind w) const { return workers_[index(w)].generation; }
  [[nodiscard]] scheduler_stats stats() const;
  [[nodiscard]] bool physical() const { return prefill_pool_ != decode_pool_; }
  [[nodiscard]] const request_table& table() const { return table_; }
  [[nodiscard]] const prefix_cache& cache() const { return cache_; }

 private:
  /// A request the scheduler knows: what it asked for and how far it got.
  struct held_request {
    client_request req;
    /// Tokens its decode worker produced (and the client was sent): a request whose worker dies
    /// is re-admitted from prompt + these and carries on after them.
    std::vector<int32_t> generated;
    uint32_t retries = 0;  ///< prefills of it that killed their worker
    uint32_t stage = 4;    ///< its rollout stage: the levers it is served with
    double submitted_s = 0;
    uint32_t proposals = 0, draft_failures = 0;  ///< draft proposals asked for it, and that errored
    uint32_t cached_tokens = 0;  ///< its last prefill's tokens copied from the prefix cache
    std::vector<token_logprobs> prompt_logprobs;  ///< prompt scoring: what its prefill slices scored
  };
  /// A request routed to the prefill device, from admission to its decode job.
  struct staged_request {
    kv_handle decode_kv;             ///< reserved in the decode pool (worst case) until handed on
    uint32_t prefill_epoch = 0;      ///< its prefill-pool allocation (released on a lost worker)
    uint32_t prompt_tokens = 0;      ///< tokens the prefill device computes
    double admitted_s = 0;
    bool on_prefill_device = false;  ///< its job there has not replied yet
    bool failed_over = false;        ///< prefilled co-located instead (deadline or a device error)
    bool transferring = false;       ///< its KV is on the way to the decode pool
    float attention_entropy = -1;    ///< from the prefill, for the decode job
    double prefilled_s = 0;
  };
  /// A running sequence the scheduler holds: parked, or moving to the offload device.
  struct held_sequence {
    uint64_t id = 0;
    kv_handle kv;  ///< in the decode pool
    carried_sequence seq;
    uint32_t to_epoch = 0;  ///< moving: the offload-pool allocation the transfer writes
    bool cancelled = false;
  };
  struct pd_counters {
    uint64_t transfers = 0, bytes = 0, f32_bytes = 0, refused = 0, failovers = 0;
    uint64_t co_located = 0, physical = 0;
    double transfer_s = 0;
    double prefill_rate = 0;  ///< tokens/s on the prefill device (moving average)
    double last_reply_s = 0;  ///< when the prefill device last finished a job
    std::string last_reason;
  };
  struct worker_slot {
    bool up = false;
    uint64_t generation = 0;  ///< 0: never ran
  };

  static size_t index(worker_kind w) { return static_cast<size_t>(w); }
  scheduler_actions flush();
  double now() const { return clock_(); }

  // Admission and routes.
  bool ready() const;
  uint32_t admission_blocks() const;
  void admit();
  prefill_route route(std::span<const int32_t> history);
  uint32_t predicted_room() const;
  void record_decision(double t0);
  std::vector<int32_t> prefill_history(uint64_t id) const;
  uint32_t reuse_prefix(uint64_t id, std::span<const int32_t> history, kv_handle& kv);
  /// Whether request id scores its prompt in its next prefill (prompt_logprobs, nothing generated
  /// yet): then its prompt is computed whole, on the decode device.
  bool scores_prompt(uint64_t id) const;
  /// The prefill job of request id: history from `reused` on, into kv (with its scoring fields).
  prefill_job prefill_for(uint64_t id, const std::vector<int32_t>& history, uint32_t reused, kv_handle kv);
  void remember_prefix(const std::vector<int32_t>& prompt, const kv_handle& kv, const kv_block_pool& src);
  void release_cached(std::vector<kv_handle> handles);
  void send_prefill(worker_kind worker, prefill_job job);
  // The single device's prefill queue (setup::prefill_shortest_first; scheduler_prefill_queue.cpp).
  bool queue_prefill(worker_kind worker, prefill_job& job);
  bool prefill_slice_done(worker_kind worker, prefill_done& d);
  void prefill_slice_failed(worker_kind worker, uint64_t id);
  void pump_prefills();
  void start_decode(uint64_t id, kv_handle kv, float entropy, double prefilled_s);

  // Replies of the prefill device and the transfer worker.
  void prefilled_local(prefill_done& d);
  void prefilled_remote(prefill_done& d);
  void drop_staged(uint64_t id);
  void transferred(transfer_done& t);
  void transfer_lost(uint64_t id, bool receiver_down, const error& e);
  void fail_over(uint64_t id, staged_request& sr, const std::string& why);
  void prefill_remote_failed(uint64_t id, uint64_t generation, bool receiver_down, const error& e);
  void prefill_local_failed(uint64_t id, worker_kind worker, uint64_t generation, bool receiver_down, error e);
  void offloaded(transfer_done& t);
  void offload_lost(uint64_t id);

  // Workers and sequences.
  bool is_current(worker_kind w, uint64_t generation) const;
  void release_returned(kv_handle& h, const char* what);
  void mark_down(worker_kind w) { workers_[index(w)].up = false; }
  bool is_parked(uint64_t id) const;
  bool drop_parked(uint64_t id);
  void adopt(held_sequence s);
  void send_cancel(uint64_t id);
  void release_lost(const std::vector<std::pair<uint64_t, uint32_t>>& lost, kv_block_pool& from, const char* worker,
                    const std::string& reason);
  uint8_t transfer_wire() const;
  void consider_offload();
  void hand_over_ended(uint64_t id);

  // Outcomes.
  void fail(uint64_t id, const error& e);
  void reject(uint64_t id, const error& e);
  void record_outcome(const held_request& h, bool error);

  kv_block_pool* decode_pool_;
  kv_block_pool* prefill_pool_;  ///< == decode_pool_ when co-located; the prefix cache's home
  kv_block_pool* offload_pool_;
  setup cfg_;
  clock_fn clock_;
  request_table table_;
  std::unordered_map<uint64_t, held_request> requests_;
  std::unordered_map<uint64_t, staged_request> staged_;
  std::vector<decode_job> parked_jobs_;          ///< ready while no decode worker runs
  std::vector<held_sequence> parked_sequences_;  ///< running sequences coming back then
  std::unordered_map<uint64_t, held_sequence> transit_;  ///< moving to the offload device
  std::unordered_set<uint64_t> offloaded_;               ///< decoding on the offload device
  std::unordered_set<uint64_t> handing_over_;            ///< asked of the decode worker (hand_over)
  worker_slot workers_[worker_kinds];
  prefix_cache cache_;
  uint64_t cache_tick_ = 0;  ///< the cache's recency clock (one per lookup or insert)
  decode_time_predictor predictor_;
  std::optional<rollout_breaker> rollout_;
  pd_counters pd_;
  uint8_t degradation_ = 0;
  std::string degradation_reason_;
  bool admission_held_ = false;
  uint64_t admission_holds_ = 0;
  uint64_t offloaded_total_ = 0, offload_refused_ = 0, offload_asked_ = 0, offload_missed_ = 0;
  uint64_t prefill_chunks_ = 0, prefill_chunk_rows_ = 0;
  uint64_t worker_restarts_ = 0, rejected_ = 0;
  static constexpr size_t decision_window = 8192;
  std::vector<float> decision_us_;
  uint64_t decisions_ = 0;
  /// A prompt waiting for the single device's prefill worker (what is left of it: its KV holds
  /// the slices done so far).
  struct queued_prefill {
    prefill_job job;
    double queued_s = 0;
    uint64_t seq = 0;  ///< arrival order
  };
  std::vector<queued_prefill> prefill_queue_;
  std::optional<queued_prefill> prefill_running_;  ///< the rest of the prompt whose slice is running
  uint64_t prefill_slices_ = 0, prefill_reordered_ = 0, prefill_seq_ = 0;
  scheduler_actions out_;
};

}  // namespace fw
