#include "runtime/sched/request_table.hpp"

#include <algorithm>
#include <string>

namespace fw {

expected<void> request_table::submit(uint64_t id, uint32_t prompt_tokens, uint32_t budget, uint32_t kv_blocks,
                                     double now_s) {
  if (records_.count(id)) return make_error(errc::invalid_argument, "duplicate request id " + std::to_string(id));
  if (auto ok = policy_.enqueue(queued_request{id, kv_blocks, now_s}); !ok) return ok;
  request_record r;
  r.id = id;
  r.prompt_tokens = prompt_tokens;
  r.budget = budget;
  r.kv_blocks = kv_blocks;
  records_.emplace(id, r);
  peak_waiting_ = std::max<uint64_t>(peak_waiting_, policy_.waiting());
  return {};
}

uint32_t request_table::next_prompt_tokens() const {
  const auto head = policy_.head();
  if (!head) return 0;
  auto it = records_.find(*head);
  return it == records_.end() ? 0 : it->second.prompt_tokens;
}

std::vector<uint64_t> request_table::admit(uint32_t free_blocks, uint32_t max_new) {
  auto ids = policy_.admit(free_blocks, max_new);
  for (uint64_t id : ids) records_.at(id).phase = request_phase::prefilling;
  peak_running_ = std::max<uint64_t>(peak_running_, policy_.running());
  return ids;
}

void request_table::started(uint64_t id, uint32_t epoch) {
  if (auto it = records_.find(id); it != records_.end()) it->second.epoch = epoch;
}

void request_table::allocation_failed(uint64_t id) {
  if (records_.count(id)) ++failed_;
  erase(id);
}

request_table::after_prefill request_table::prefilled(uint64_t id) {
  auto it = records_.find(id);
  if (it == records_.end() || it->second.cancelled) {
    erase(id);
    return after_prefill::release;
  }
  it->second.phase = request_phase::decoding;
  return after_prefill::decode;
}

request_table::prefill_failure request_table::prefill_failed(uint64_t id, bool retry, double now_s) {
  prefill_failure out;
  auto it = records_.find(id);
  if (it == records_.end()) return out;
  out.known = true;
  out.epoch = it->second.epoch;
  out.was_cancelled = it->second.cancelled;
  policy_.remove(id);
  if (!out.was_cancelled && retry) {
    // Back to the head of the queue for the replacement worker.
    request_record& r = it->second;
    policy_.requeue(queued_request{id, r.kv_blocks, now_s});
    r.phase = request_phase::waiting;
    r.epoch = 0;
    ++requeued_;
    out.requeued = true;
    return out;
  }
  if (!out.was_cancelled) ++failed_;
  records_.erase(it);
  return out;
}

void request_table::finished(const std::vector<uint64_t>& ids) {
  for (uint64_t id : ids) {
    if (records_.count(id)) ++completed_;
    erase(id);
  }
}

bool request_table::failed(uint64_t id) {
  if (!records_.count(id)) return false;
  ++failed_;
  erase(id);
  return true;
}

request_table::cancel_outcome request_table::cancel(uint64_t id) {
  auto it = records_.find(id);
  if (it == records_.end()) return cancel_outcome::unknown;
  policy_.remove(id);
  switch (it->second.phase) {
    case request_phase::waiting:
      records_.erase(it);
      return cancel_outcome::removed;
    case request_phase::prefilling:
      it->second.cancelled = true;
      return cancel_outcome::release_later;
    case request_phase::decoding:
      records_.erase(it);
      return cancel_outcome::cancel_in_decode;
  }
  return cancel_outcome::unknown;
}

std::vector<std::pair<uint64_t, uint32_t>> request_table::decode_worker_lost() {
  return decode_worker_lost([](uint64_t) { return true; });
}

void request_table::kv_moved(uint64_t id, uint32_t epoch) {
  if (auto it = records_.find(id); it != records_.end()) it->second.epoch = epoch;
}

std::vector<std::pair<uint64_t, uint32_t>> request_table::decode_worker_lost(const std::function<bool(uint64_t)>& held) {
  std::vector<std::pair<uint64_t, uint32_t>> lost;
  for (const auto& [id, r] : records_)
    if (r.phase == request_phase::decoding && held(id)) lost.emplace_back(id, r.epoch);
  for (const auto& [id, epoch] : lost) {
    ++failed_;
    erase(id);
  }
  return lost;
}

std::vector<std::pair<uint64_t, uint32_t>> request_table::requeue_decoding(const std::function<bool(uint64_t)>& held,
                                                                          double now_s) {
  std::vector<std::pair<uint64_t, uint32_t>> lost;
  for (const auto& [id, r] : records_)
    if (r.phase == request_phase::decoding && held(id)) lost.emplace_back(id, r.epoch);
  // Lower ids (older requests) end up first in the queue.
  std::sort(lost.begin(), lost.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [id, epoch] : lost) {
    request_record& r = records_.at(id);
    policy_.remove(id);
    policy_.requeue(queued_request{id, r.kv_blocks, now_s});
    r.phase = request_phase::waiting;
    r.epoch = 0;
    ++resumed_;
  }
  return lost;
}

std::vector<std::pair<uint64_t, request_phase>> request_table::expire(double now_s) {
  std::vector<std::pair<uint64_t, request_phase>> out;
  for (uint64_t id : policy_.expire(now_s)) {
    auto it = records_.find(id);
    if (it == records_.end()) continue;
    out.emplace_back(id, it->second.phase);
    ++failed_;
    if (it->second.phase == request_phase::prefilling) {
      it->second.cancelled = true;  // released when the prefill replies
    } else {
      records_.erase(it);
    }
  }
  return out;
}

const request_record* request_table::find(uint64_t id) const {
  auto it = records_.find(id);
  return it == records_.end() ? nullptr : &it->second;
}

request_counts request_table::counts() const {
  request_counts c;
  for (const auto& [id, r] : records_) {
    if (r.cancelled) continue;
    c.waiting += r.phase == request_phase::waiting;
    c.prefilling += r.phase == request_phase::prefilling;
    c.decoding += r.phase == request_phase::decoding;
  }
  c.completed = completed_;
  c.failed = failed_;
  c.requeued = requeued_;
  c.resumed = resumed_;
  c.peak_waiting = peak_waiting_;
  c.peak_running = peak_running_;
  return c;
}

void request_table::erase(uint64_t id) {
  policy_.remove(id);
  records_.erase(id);
}

}  // namespace fw
