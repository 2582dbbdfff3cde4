// The scheduler's prefill queue for one device (runtime/sched/scheduler.hpp,
// setup::prefill_shortest_first): prompts wait here instead of in the prefill worker's mailbox;
// the worker runs one slice at a time, and after each slice the next one is picked by
// prefill_order (least work left, the starvation bound first). What is left of a prompt keeps
// its KV handle here between slices, so a cancelled or expired one releases it at once.
#include <algorithm>
#include <utility>

#include "runtime/base/log.hpp"
#include "runtime/sched/prefill_order.hpp"
#include "runtime/sched/scheduler.hpp"

namespace fw {

bool scheduler::queue_prefill(worker_kind worker, prefill_job& job) {
  // Only the single device's own prompts at rollout stage 3 and above (chunked: job.chunk 0).
  if (!cfg_.prefill_shortest_first || physical() || worker != worker_kind::prefill || job.chunk != 0) return false;
  prefill_queue_.push_back(queued_prefill{std::move(job), now(), ++prefill_seq_});
  return true;
}

bool scheduler::prefill_slice_done(worker_kind worker, prefill_done& d) {
  // A slice finished: true when the prompt has more to go (it queues again, with its KV).
  if (worker != worker_kind::prefill || !prefill_running_ || prefill_running_->job.id != d.id) return false;
  queued_prefill rest = std::move(*prefill_running_);
  prefill_running_.reset();
  if (rest.job.tokens.empty()) return false;  // the last slice: the prompt is prefilled
  rest.job.kv = std::move(d.kv);
  // Back in its arrival place: the queue stays in arrival order (ties go to the older).
  auto at = std::find_if(prefill_queue_.begin(), prefill_queue_.end(),
                         [&](const queued_prefill& q) { return q.seq > rest.seq; });
  prefill_queue_.insert(at, std::move(rest));
  return true;
}

void scheduler::prefill_slice_failed(worker_kind worker, uint64_t id) {
  // The running slice failed: its handle died with the job (the failure path releases it by
  // epoch and requeues or fails the request); the rest of the prompt is dropped with it.
  if (worker == worker_kind::prefill && prefill_running_ && prefill_running_->job.id == id) prefill_running_.reset();
}

void scheduler::pump_prefills() {
  bool freed = false;
  for (size_t i = 0; i < prefill_queue_.size();) {
    const uint64_t id = prefill_queue_[i].job.id;
    const request_record* r = table_.find(id);
    if (r && !r->cancelled) {
      ++i;
      continue;
    }
    // Cancelled or expired before its prefill finished: its KV goes back now.
    kv_handle kv = std::move(prefill_queue_[i].job.kv);
    prefill_queue_.erase(prefill_queue_.begin() + static_cast<std::ptrdiff_t>(i));
    ignore_error("scheduler: releasing a cancelled prompt's KV", decode_pool_->release(kv));
    if (table_.prefilled(id) == request_table::after_prefill::release) requests_.erase(id);
    freed = true;
  }
  if (freed) admit();  // may queue more prompts
  if (prefill_running_ || prefill_queue_.empty() || !worker_running(worker_kind::prefill)) return;

  std::vector<prefill_candidate> c;  // in arrival order
  c.reserve(prefill_queue_.size());
  for (const auto& q : prefill_queue_) c.push_back({q.job.id, static_cast<uint32_t>(q.job.tokens.size()), q.queued_s});
  const size_t pick = pick_prefill(c, now(), cfg_.prefill_max_wait_s);
  if (pick != 0) ++prefill_reordered_;
  queued_prefill q = std::move(prefill_queue_[pick]);
  prefill_queue_.erase(prefill_queue_.begin() + static_cast<std::ptrdiff_t>(pick));
  const size_t n = std::min<size_t>(q.job.tokens.size(), std::max<uint32_t>(cfg_.prefill_slice, 1));
  prefill_job slice{q.job.id, std::vector<int32_t>(q.job.tokens.begin(), q.job.tokens.begin() + static_cast<std::ptrdiff_t>(n)),
                    std::move(q.job.kv), 0};
  slice.prompt_logprobs = q.job.prompt_logprobs;  // scoring: the slice's last row scores the next slice's first token
  slice.next_token = n < q.job.tokens.size() ? q.job.tokens[n] : q.job.next_token;
  q.job.tokens.erase(q.job.tokens.begin(), q.job.tokens.begin() + static_cast<std::ptrdiff_t>(n));
  prefill_running_ = std::move(q);
  ++prefill_slices_;
  out_.push_back(run_prefill{worker_kind::prefill, generation(worker_kind::prefill), std::move(slice)});
}

}  // namespace fw
