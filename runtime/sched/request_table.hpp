// request_table: the life of every request the scheduler holds, as pure code (no actors, no
// clock: callers pass the time). States: waiting -> prefilling -> decoding -> gone (done or
// failed); cancel in any state; a request whose prefill or decode worker died goes back to the
// head of the queue (the owner re-admits a decoding one from its token history). Admission order and limits come from scheduler_policy (FIFO, worst-case KV
// blocks, queue limit, request timeout). Each method says what its owner must do next (send a
// job, release a KV allocation by epoch, fail the request), so the scheduler actor only
// forwards messages. Tested with fabricated events (tests/runtime/sched/request_table_test.cpp), like
// vLLM v1's scheduler. Thread-safety: none; one owner (the scheduler actor).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/sched/scheduler_policy.hpp"

namespace fw {

enum class request_phase : uint8_t { waiting, prefilling, decoding };

struct request_record {
  uint64_t id = 0;
  uint32_t prompt_tokens = 0;
  uint32_t budget = 0;     ///< tokens it may generate
  uint32_t kv_blocks = 0;  ///< worst case, reserved at admission
  uint32_t epoch = 0;      ///< of its KV allocation while prefilling or decoding; 0: none
  request_phase phase = request_phase::waiting;
  bool cancelled = false;  ///< while prefilling: release its KV when the prefill replies
};

/// Counters since start.
struct request_counts {
  uint64_t waiting = 0, prefilling = 0, decoding = 0;
  uint64_t completed = 0, failed = 0, requeued = 0;
  uint64_t resumed = 0;  ///< decoding requests re-admitted after their decode worker died
  uint64_t peak_waiting = 0;  ///< the longest the admission queue has been
  uint64_t peak_running = 0;  ///< the most requests admitted at once (prefilling + decoding)
};

class request_table {
 public:
  explicit request_table(scheduler_limits limits) : policy_(limits) {}

  /// Queues a request (waiting). errc::invalid_argument for a duplicate id, errc::overloaded
  /// when the queue is full, errc::out_of_memory when it can never fit the KV pool.
  expected<void> submit(uint64_t id, uint32_t prompt_tokens, uint32_t budget, uint32_t kv_blocks, double now_s);

  /// Requests to prefill now (FIFO, while the batch and free_blocks allow): they become
  /// prefilling. The owner allocates each one's KV and reports started() or allocation_failed().
  std::vector<uint64_t> admit(uint32_t free_blocks, uint32_t max_new = UINT32_MAX);
  /// The prompt size of the request admit() would take next; 0 when none waits.
  [[nodiscard]] uint32_t next_prompt_tokens() const;
  /// The KV allocation (epoch) of a request admit() returned.
  void started(uint64_t id, uint32_t epoch);
  /// admit() returned it but its KV could not be allocated: it is gone (the owner fails it).
  void allocation_failed(uint64_t id);

  enum class after_prefill { decode, release };
  /// Its prefill finished: decode it, or (cancelled meanwhile, or unknown) release the KV.
  after_prefill prefilled(uint64_t id);

  /// Its prefill failed. retry: the job's worker died (for another request, or on this one
  /// with retries left), so it goes back to the head of the queue (requeued). Otherwise it is
  /// gone (the owner fails it unless it was cancelled). Either way the owner releases the KV of
  /// `epoch` (the allocation the job carried).
  struct prefill_failure {
    bool requeued = false;
    bool was_cancelled = false;
    uint32_t epoch = 0;  ///< to release; 0: none
    bool known = false;
  };
  prefill_failure prefill_failed(uint64_t id, bool retry, double now_s);

  /// Decoding requests that finished normally (the decode worker freed their KV).
  void finished(const std::vector<uint64_t>& ids);
  /// A decoding request the decode worker failed (its KV already freed there).
  bool failed(uint64_t id);

  enum class cancel_outcome {
    unknown,           ///< not here (finished already): nothing to do
    removed,           ///< was waiting: gone
    release_later,     ///< prefilling: its KV is released when the prefill replies
    cancel_in_decode,  ///< decoding: the owner tells the decode worker, which frees the KV
  };
  cancel_outcome cancel(uint64_t id);

  /// The decode worker died: every decoding request is gone; returns (id, epoch) of each, whose
  /// KV the owner releases by epoch and whose request it fails.
  std::vector<std::pair<uint64_t, uint32_t>> decode_worker_lost();
  /// The same for one of several decode workers: only the decoding requests `held` says it held.
  std::vector<std::pair<uint64_t, uint32_t>> decode_worker_lost(const std::function<bool(uint64_t)>& held);
  /// The same, but nothing is lost: the decoding requests `held` says it held go back to the
  /// head of the queue, to be re-admitted from their token history (prompt + tokens already
  /// streamed; the owner keeps those). Returns (id, epoch) of each, whose KV the owner releases.
  std::vector<std::pair<uint64_t, uint32_t>> requeue_decoding(const std::function<bool(uint64_t)>& held, double now_s);
  /// A decoding request's KV moved to another pool (offload): its allocation is now `epoch`.
  void kv_moved(uint64_t id, uint32_t epoch);

  /// Requests older than the request timeout, removed from admission; each with the phase it
  /// was in (prefilling ones stay until their prefill replies, marked cancelled).
  std::vector<std::pair<uint64_t, request_phase>> expire(double now_s);

  [[nodiscard]] const request_record* find(uint64_t id) const;
  [[nodiscard]] request_counts counts() const;
  [[nodiscard]] size_t size() const { return records_.size(); }
  [[nodiscard]] const scheduler_policy& policy() const { return policy_; }

 private:
  void erase(uint64_t id);

  scheduler_policy policy_;
  std::unordered_map<uint64_t, request_record> records_;
  uint64_t completed_ = 0, failed_ = 0, requeued_ = 0, resumed_ = 0, peak_waiting_ = 0, peak_running_ = 0;
};

}  // namespace fw
