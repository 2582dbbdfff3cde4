// scheduler_policy: the pure decision logic of the request scheduler (no threads, no actors).
// Waiting requests form a FIFO; a request is admitted when the decode batch has room and the KV
// pool can hold its worst case (prompt + max new tokens), so an admitted request never runs out
// of KV mid-generation; otherwise it waits (head-of-line, so large requests are not starved).
// Requests too large for the whole pool are refused at enqueue. Decode order, when more
// sequences run than one step may take, favours the longest generations (short requests cannot
// starve long ones). Thread-safety: none; owned by the scheduler actor.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include "runtime/base/expected.hpp"

namespace fw {

struct scheduler_limits {
  uint32_t max_running = 16;       ///< sequences decoded together
  uint32_t max_queue = 256;        ///< waiting requests before new ones are refused
  uint32_t total_kv_blocks = 0;    ///< capacity of the KV pool
  double request_timeout_s = 600;  ///< a request still unfinished after this fails
};

struct queued_request {
  uint64_t id = 0;
  uint32_t kv_blocks = 0;  ///< worst-case blocks the request needs
  double enqueued_s = 0;   ///< monotonic seconds
};

class scheduler_policy {
 public:
  explicit scheduler_policy(scheduler_limits limits) : limits_(limits) {}

  /// Queues a request; errc::overloaded when the queue is full, errc::out_of_memory when it can
  /// never fit the pool.
  expected<void> enqueue(const queued_request& r);

  /// Puts a request that was admitted before (its worker died) back at the head of the queue,
  /// whatever the queue limit: it is re-admitted first.
  void requeue(const queued_request& r);

  /// Requests to start now, in FIFO order, given the pool's free blocks. They become running.
  /// At most max_new of them (the decode-time predictor's room; unlimited by default).
  std::vector<uint64_t> admit(uint32_t free_blocks, uint32_t max_new = UINT32_MAX);
  /// The request admit() would take next, if any waits.
  [[nodiscard]] std::optional<uint64_t> head() const {
    return waiting_.empty() ? std::nullopt : std::optional<uint64_t>(waiting_.front().id);
  }

  /// Requests (waiting or running) older than the request timeout; they are forgotten here.
  std::vector<uint64_t> expire(double now_s);

  /// A running or waiting request ended (finished, failed or cancelled). Returns whether it was
  /// known.
  bool remove(uint64_t id);

  size_t waiting() const { return waiting_.size(); }
  size_t running() const { return running_.size(); }
  bool is_waiting(uint64_t id) const;
  bool is_running(uint64_t id) const { return running_.count(id) > 0; }
  const scheduler_limits& limits() const { return limits_; }

  /// Which sequences decode this step when at most `max_rows` may: the ones with the most
  /// generated tokens first (ties: lower id first). Input: (id, generated) pairs.
  static std::vector<uint64_t> decode_order(std::vector<std::pair<uint64_t, uint32_t>> seqs,
                                            uint32_t max_rows);

 private:
  scheduler_limits limits_;
  std::deque<queued_request> waiting_;
  std::unordered_map<uint64_t, double> running_;  ///< id -> enqueue time
};

}  // namespace fw
