#include "runtime/sched/scheduler_policy.hpp"

#include <algorithm>

namespace fw {

expected<void> scheduler_policy::enqueue(const queued_request& r) {
  if (limits_.total_kv_blocks > 0 && r.kv_blocks > limits_.total_kv_blocks)
    return make_error(errc::out_of_memory, "request needs " + std::to_string(r.kv_blocks) +
                      " KV blocks but the pool has only " + std::to_string(limits_.total_kv_blocks) +
                      "; shorten the prompt or max_tokens, or enlarge kv_cache.pool_tokens");
  if (waiting_.size() >= limits_.max_queue)
    return make_error(errc::overloaded, "request queue is full (" + std::to_string(limits_.max_queue) + " waiting)");
  waiting_.push_back(r);
  return {};
}

void scheduler_policy::requeue(const queued_request& r) {
  running_.erase(r.id);
  waiting_.push_front(r);
}

std::vector<uint64_t> scheduler_policy::admit(uint32_t free_blocks, uint32_t max_new) {
  std::vector<uint64_t> out;
  while (!waiting_.empty() && running_.size() < limits_.max_running && out.size() < max_new &&
         waiting_.front().kv_blocks <= free_blocks) {
    const auto& r = waiting_.front();
    free_blocks -= r.kv_blocks;
    running_.emplace(r.id, r.enqueued_s);
    out.push_back(r.id);
    waiting_.pop_front();
  }
  return out;
}

std::vector<uint64_t> scheduler_policy::expire(double now_s) {
  std::vector<uint64_t> out;
  const double limit = limits_.request_timeout_s;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (now_s - it->enqueued_s > limit) {
      out.push_back(it->id);
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = running_.begin(); it != running_.end();) {
    if (now_s - it->second > limit) {
      out.push_back(it->first);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

bool scheduler_policy::remove(uint64_t id) {
  if (running_.erase(id) > 0) return true;
  auto it = std::find_if(waiting_.begin(), waiting_.end(), [&](const auto& r) { return r.id == id; });
  if (it == waiting_.end()) return false;
  waiting_.erase(it);
  return true;
}

bool scheduler_policy::is_waiting(uint64_t id) const {
  return std::any_of(waiting_.begin(), waiting_.end(), [&](const auto& r) { return r.id == id; });
}

std::vector<uint64_t> scheduler_policy::decode_order(std::vector<std::pair<uint64_t, uint32_t>> seqs,
                                                     uint32_t max_rows) {
  std::sort(seqs.begin(), seqs.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<uint64_t> out;
  for (size_t i = 0; i < seqs.size() && i < max_rows; ++i) out.push_back(seqs[i].first);
  return out;
}

}  // namespace fw
