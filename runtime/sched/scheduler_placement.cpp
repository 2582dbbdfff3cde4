// The scheduler's placement half (runtime/sched/scheduler.hpp): admission, routes, the prefix
// cache's copies, and what the replies of the prefill device and the transfer worker lead to.
// scheduler.cpp has the events, the queries and the workers' book-keeping.
#include <algorithm>
#include <utility>

#include "runtime/base/log.hpp"
#include "runtime/sched/scheduler.hpp"
#include "runtime/supervise/degradation_policy.hpp"

namespace fw {

// -- admission and routes --

bool scheduler::ready() const {
  // With a prefill/decode pair, prompts go co-located while the prefill device's worker or the
  // transfer worker is being restarted.
  return worker_running(worker_kind::decode) &&
         worker_running(physical() ? worker_kind::fallback : worker_kind::prefill);
}

uint32_t scheduler::admission_blocks() const {
  // The decode pool holds every request's worst case; with a separate prefill device its pool
  // must also hold the prompt (conservatively the same).
  uint32_t free = decode_pool_->free_blocks();
  if (physical()) free = std::min(free, prefill_pool_->free_blocks());
  return free;
}

void scheduler::admit() {
  if (!ready()) return;
  const double t0 = now();
  const uint32_t room = predicted_room();
  auto ids = table_.admit(admission_blocks(), room);
  if (!ids.empty()) record_decision(t0);
  if (ids.empty() && room > 0 && table_.counts().waiting > 0 && cache_.stats().blocks > 0) {
    // Requests wait while cached prefixes hold blocks: running requests come first.
    release_cached(cache_.evict_all());
    ids = table_.admit(admission_blocks(), room);
  }
  admission_held_ = room != UINT32_MAX && table_.counts().waiting > 0;
  if (room == 0 && table_.counts().waiting > 0) ++admission_holds_;
  for (uint64_t id : ids) {
    const request_record& r = *table_.find(id);
    auto h = decode_pool_->allocate(r.prompt_tokens + r.budget);
    if (!h) {  // the table saw enough free blocks; only a foreign allocation could cause this
      table_.allocation_failed(id);
      fail(id, make_error(errc::out_of_memory, "KV cache pool exhausted while admitting the request"));
      continue;
    }
    table_.started(id, h->epoch);
    // The last prompt token is the first decode step's input: never prefilled.
    const std::vector<int32_t> history = prefill_history(id);
    const uint32_t stage = requests_.at(id).stage;
    const bool stage4 = stage >= 4;  // physical PD is rollout stage 4
    if (!stage4 && physical()) {
      ++pd_.co_located;
      pd_.last_reason = "rollout: stage " + std::to_string(stage) + " has no physical PD";
    }
    if (stage4 && physical() && !scores_prompt(id) && route(history) == prefill_route::physical) {
      if (auto p = prefill_pool_->allocate(static_cast<uint32_t>(history.size()))) {
        const uint32_t reused = reuse_prefix(id, history, *p);
        staged_request sr;
        sr.decode_kv = std::move(*h);
        sr.prefill_epoch = p->epoch;
        sr.prompt_tokens = static_cast<uint32_t>(history.size()) - reused;
        sr.admitted_s = now();
        sr.on_prefill_device = true;
        staged_[id] = std::move(sr);
        send_prefill(worker_kind::prefill, prefill_for(id, history, reused, std::move(*p)));
        continue;
      }
    }
    const uint32_t reused = reuse_prefix(id, history, *h);
    send_prefill(physical() ? worker_kind::fallback : worker_kind::prefill, prefill_for(id, history, reused, std::move(*h)));
  }
}

prefill_route scheduler::route(std::span<const int32_t> history) {
  const double t0 = now();
  route_inputs in;
  in.separate_devices = true;
  in.prefill_device_up = worker_running(worker_kind::prefill) && worker_running(worker_kind::transfer);
  in.prompt_blocks = prefill_pool_->layout().blocks_for_tokens(static_cast<uint32_t>(history.size()));
  in.prefill_free_blocks = prefill_pool_->free_blocks();
  for (const auto& [id, sr] : staged_)
    if (sr.on_prefill_device && !sr.failed_over) in.queued_tokens += sr.prompt_tokens;
  in.prompt_tokens = static_cast<uint32_t>(history.size());
  in.prefill_tokens_per_s = pd_.prefill_rate;
  in.deadline_s = cfg_.prefill_deadline_s;
  auto d = choose_route(in);
  if (d.route == prefill_route::physical && degradation_ >= static_cast<uint8_t>(degradation_state::co_located)) {
    d.route = prefill_route::co_located;
    d.reason = std::string("degraded (") + to_string(static_cast<degradation_state>(degradation_)) +
               "): " + degradation_reason_;
  }
  record_decision(t0);
  if (d.route == prefill_route::physical) {
    ++pd_.physical;
  } else {
    ++pd_.co_located;
    pd_.last_reason = d.reason;
  }
  return d.route;
}

uint32_t scheduler::predicted_room() const {
  // How many waiting requests may start now under [scheduler] admission_tpot_ms: the batch's
  // predicted decode step with them stays within the target (an idle device takes one).
  const double target = cfg_.admission_tpot_s;
  if (target <= 0 || !predictor_.fitted()) return UINT32_MAX;
  double sum = 0, rows = 0;
  for (const auto& [id, h] : requests_) {
    const request_record* r = table_.find(id);
    if (!r || r->phase == request_phase::waiting) continue;
    sum += r->prompt_tokens + h.generated.size();
    ++rows;
  }
  if (rows == 0) return 1;
  return predictor_.room(sum, rows, cfg_.n_layer, table_.next_prompt_tokens(), target);
}

void scheduler::record_decision(double t0) {
  const auto us = static_cast<float>((now() - t0) * 1e6);
  if (decision_us_.size() < decision_window) decision_us_.push_back(us);
  else decision_us_[decisions_ % decision_window] = us;
  ++decisions_;
}

std::vector<int32_t> scheduler::prefill_history(uint64_t id) const {
  // Its prompt and the tokens it had generated before a worker died, all but the last (the
  // first decode step's input).
  const auto& held = requests_.at(id);
  std::vector<int32_t> h = held.req.prompt;
  h.insert(h.end(), held.generated.begin(), held.generated.end());
  h.pop_back();
  return h;
}

bool scheduler::scores_prompt(uint64_t id) const {
  const auto& held = requests_.at(id);
  return held.req.params.prompt_logprobs >= 0 && held.generated.empty();
}

prefill_job scheduler::prefill_for(uint64_t id, const std::vector<int32_t>& history, uint32_t reused, kv_handle kv) {
  prefill_job job{id, std::vector<int32_t>(history.begin() + reused, history.end()), std::move(kv)};
  job.cached.assign(history.begin(), history.begin() + reused);
  if (scores_prompt(id)) {  // the history is the prompt but its last token, the first decode step's input
    auto& held = requests_.at(id);
    job.prompt_logprobs = held.req.params.prompt_logprobs;
    job.next_token = held.req.prompt.back();
    held.prompt_logprobs.clear();  // a retried prefill scores again from the start
  }
  return job;
}

uint32_t scheduler::reuse_prefix(uint64_t id, std::span<const int32_t> history, kv_handle& kv) {
  // Copies the longest cached prefix of history into kv (either pool); returns the tokens reused.
  // A prompt being scored is computed whole (cached tokens have no logits).
  if (cfg_.prefix_cache_blocks == 0 || scores_prompt(id)) return 0;
  const auto m = cache_.lookup(history, ++cache_tick_);
  kv_block_pool& dst = kv.pool_id == decode_pool_->pool_id() ? *decode_pool_ : *prefill_pool_;
  if (m.tokens > 0 && dst.copy_tokens(*prefill_pool_, *m.kv, kv, m.tokens)) return m.tokens;
  return 0;
}

void scheduler::remember_prefix(const std::vector<int32_t>& prompt, const kv_handle& kv, const kv_block_pool& src) {
  // Copies the prompt's whole blocks (kv in pool src) into a cache entry (the owner keeps kv).
  const uint32_t bt = cache_.block_tokens();
  const uint32_t n = kv.n_tokens / bt * bt;
  if (cfg_.prefix_cache_blocks == 0 || n == 0) return;
  const std::span<const int32_t> history(prompt.data(), std::min<size_t>(prompt.size(), n));
  if (cache_.find(history).tokens == n) return;  // cached already
  kv_handle copy;
  if (!prefill_pool_->copy_tokens(src, kv, copy, n)) return;  // no free blocks: nothing cached
  release_cached(cache_.insert(history, std::move(copy), ++cache_tick_));
}

void scheduler::release_cached(std::vector<kv_handle> handles) {
  for (auto& h : handles) ignore_error("scheduler: releasing a prefix-cache entry", prefill_pool_->release(h));
}

void scheduler::send_prefill(worker_kind worker, prefill_job job) {
  const uint64_t id = job.id;
  // Below rollout stage 3 (logical PD) a prompt runs as one forward, as without separation.
  if (auto it = requests_.find(id); it != requests_.end()) {
    it->second.cached_tokens = job.kv.n_tokens;  // what reuse_prefix copied in; the rest is computed
    if (it->second.stage < 3) job.chunk = 1u << 16;
  }
  if (queue_prefill(worker, job)) return;
  if (!worker_running(worker)) {
    // The worker is being restarted: as if the job had reached a dead worker (its KV is
    // released by its epoch, as for a job that died with its worker).
    const error down = make_error(errc::worker_failed, std::string("the ") + to_string(worker) + " worker is down");
    if (physical() && worker == worker_kind::prefill) prefill_remote_failed(id, 0, true, down);
    else prefill_local_failed(id, worker, 0, true, down);
    return;
  }
  out_.push_back(run_prefill{worker, generation(worker), std::move(job)});
}

void scheduler::start_decode(uint64_t id, kv_handle kv, float entropy, double prefilled_s) {
  auto& held = requests_.at(id);
  const request_record& r = *table_.find(id);
  decode_job job{id,          held.req.prompt, held.req.params, r.budget,         std::move(kv),
                 entropy,     prefilled_s,     held.generated,  held.cached_tokens, std::move(held.prompt_logprobs)};
  held.prompt_logprobs.clear();
  if (!worker_running(worker_kind::decode)) {  // being restarted: the job waits for the replacement
    parked_jobs_.push_back(std::move(job));
    return;
  }
  out_.push_back(run_decode{std::move(job)});
}

// -- replies of the prefill device and the transfer worker --

void scheduler::prefilled_local(prefill_done& d) {
  // A prefill into the decode pool finished (co-located, or the fallback of a physical pair).
  if (table_.prefilled(d.id) == request_table::after_prefill::release) {
    ignore_error("scheduler: releasing a cancelled request's KV", decode_pool_->release(d.kv));
    requests_.erase(d.id);
    admit();
    return;
  }
  remember_prefix(requests_.at(d.id).req.prompt, d.kv, *decode_pool_);
  start_decode(d.id, std::move(d.kv), d.attention_entropy, d.done_s);
}

void scheduler::prefilled_remote(prefill_done& d) {
  // The prefill device finished a prompt (d.kv in its pool): move the KV to the decode device.
  auto it = staged_.find(d.id);
  if (it == staged_.end()) {
    ignore_error("scheduler: releasing an unknown prefill's KV", prefill_pool_->release(d.kv));
    return;
  }
  staged_request& sr = it->second;
  sr.on_prefill_device = false;
  pd_.last_reply_s = now();
  pd_.prefill_rate = update_rate(pd_.prefill_rate, sr.prompt_tokens, d.ms / 1000.0);
  const request_record* r = table_.find(d.id);
  if (r && !r->cancelled) remember_prefix(requests_.at(d.id).req.prompt, d.kv, *prefill_pool_);
  if (sr.failed_over || !r || r->cancelled) {
    // Failed over already (the fallback carries on) or cancelled: this copy is not needed.
    ignore_error("scheduler: releasing a superseded prefill's KV", prefill_pool_->release(d.kv));
    if (!sr.failed_over) drop_staged(d.id);
    else staged_.erase(it);
    admit();
    return;
  }
  sr.attention_entropy = d.attention_entropy;
  sr.prefilled_s = d.done_s;
  if (!worker_running(worker_kind::transfer)) {  // being restarted
    // As if the transfer worker had died with the job: both allocations are released by epoch.
    transfer_lost(d.id, true, make_error(errc::worker_failed, "the transfer worker is down"));
    return;
  }
  sr.transferring = true;
  out_.push_back(run_transfer{transfer_job{d.id, std::move(d.kv), std::move(sr.decode_kv), transfer_wire()}});
}

void scheduler::drop_staged(uint64_t id) {
  // A staged request that will not decode (cancelled, expired): its decode reservation goes back.
  auto it = staged_.find(id);
  if (it == staged_.end()) return;
  ignore_error("scheduler: releasing a dropped request's decode KV", decode_pool_->release(it->second.decode_kv));
  staged_.erase(it);
  if (table_.prefilled(id) == request_table::after_prefill::release) requests_.erase(id);
}

void scheduler::transferred(transfer_done& t) {
  ignore_error("scheduler: releasing a transferred prefill KV", prefill_pool_->release(t.from));
  auto it = staged_.find(t.id);
  const float entropy = it != staged_.end() ? it->second.attention_entropy : -1.0f;
  const double prefilled_s = it != staged_.end() ? it->second.prefilled_s : 0.0;
  if (it != staged_.end()) staged_.erase(it);
  const request_record* r = table_.find(t.id);
  if (!t.error.empty()) {
    ++pd_.refused;
    log_warn("request " + std::to_string(t.id) + ": " + t.error + "; its prompt is recomputed on the decode device");
    if (r && !r->cancelled) {
      ++pd_.co_located;
      const std::vector<int32_t> history = prefill_history(t.id);
      const uint32_t reused = reuse_prefix(t.id, history, t.to);
      send_prefill(worker_kind::fallback, prefill_for(t.id, history, reused, std::move(t.to)));
      return;
    }
  } else {
    ++pd_.transfers;
    pd_.bytes += t.bytes;
    pd_.f32_bytes += t.f32_bytes;
    pd_.transfer_s += t.ms / 1000.0;
  }
  if (table_.prefilled(t.id) == request_table::after_prefill::release) {
    ignore_error("scheduler: releasing a cancelled request's KV", decode_pool_->release(t.to));
    requests_.erase(t.id);
    admit();
    return;
  }
  start_decode(t.id, std::move(t.to), entropy, prefilled_s);
}

void scheduler::fail_over(uint64_t id, staged_request& sr, const std::string& why) {
  // Moves a staged request's prefill to the decode device (deadline passed or device error).
  sr.failed_over = true;
  ++pd_.failovers;
  log_info("request " + std::to_string(id) + ": " + why + "; prefilling it on the decode device");
  const std::vector<int32_t> history = prefill_history(id);
  kv_handle kv = std::move(sr.decode_kv);
  const uint32_t reused = reuse_prefix(id, history, kv);
  send_prefill(worker_kind::fallback, prefill_for(id, history, reused, std::move(kv)));
}

void scheduler::prefill_remote_failed(uint64_t id, uint64_t generation, bool receiver_down, const error& e) {
  // A job on the prefill device failed (an error, or its worker died): the request fails over.
  if (receiver_down && is_current(worker_kind::prefill, generation)) mark_down(worker_kind::prefill);
  auto it = staged_.find(id);
  if (it == staged_.end()) return;
  staged_request& sr = it->second;
  prefill_pool_->release_epoch(sr.prefill_epoch);  // the handle died with the job
  sr.on_prefill_device = false;
  pd_.last_reply_s = now();
  const request_record* r = table_.find(id);
  if (sr.failed_over) {
    staged_.erase(it);
  } else if (!r || r->cancelled) {
    drop_staged(id);
  } else {
    fail_over(id, sr, "the prefill device failed (" + e.message + ")");
    staged_.erase(id);
  }
  admit();
}

void scheduler::prefill_local_failed(uint64_t id, worker_kind worker, uint64_t generation, bool receiver_down, error e) {
  // A job that reached a prefill worker which had already died for another request: this one is
  // innocent and waits for the replacement the supervisor is starting. A job whose worker died
  // on it is retried (request_retries times: a prompt that kills the worker every time must not
  // loop forever).
  const bool died_on_it = e.code == errc::worker_failed && !receiver_down;
  if ((receiver_down || died_on_it) && is_current(worker, generation)) mark_down(worker);
  bool retry = receiver_down;
  auto held = requests_.find(id);
  if (!retry && died_on_it && held != requests_.end() && held->second.retries < cfg_.request_retries) {
    ++held->second.retries;
    retry = true;
    log_warn("request " + std::to_string(id) + ": its prefill worker died on it (" + e.message + "); retry " +
             std::to_string(held->second.retries) + " of " + std::to_string(cfg_.request_retries));
  }
  const auto f = table_.prefill_failed(id, retry, now());
  if (!f.known) return;
  if (f.epoch) decode_pool_->release_epoch(f.epoch);  // the handle died with the job
  if (!f.requeued) {
    if (f.was_cancelled) {
      requests_.erase(id);
    } else {
      if (e.code == errc::worker_failed)
        e.message = "the prefill worker died while running this request " + std::to_string(cfg_.request_retries + 1) +
                    " times (" + e.message + ")";
      fail(id, e);
    }
  }
  admit();
}

void scheduler::offloaded(transfer_done& t) {
  auto it = transit_.find(t.id);
  held_sequence s = std::move(it->second);
  transit_.erase(it);
  if (s.cancelled) {
    ignore_error("scheduler: releasing a cancelled sequence's KV", decode_pool_->release(t.from));
    ignore_error("scheduler: releasing a cancelled sequence's offload KV", offload_pool_->release(t.to));
    table_.finished({t.id});
    admit();
    return;
  }
  if (!t.error.empty() || !worker_running(worker_kind::offload)) {
    // A refused stream, or the offload worker died meanwhile: it carries on on the decode device.
    ++offload_refused_;
    if (!t.error.empty()) log_warn("request " + std::to_string(t.id) + ": " + t.error + "; it keeps decoding on the decode device");
    ignore_error("scheduler: releasing an unused offload allocation", offload_pool_->release(t.to));
    adopt(std::move(s));
    return;
  }
  ignore_error("scheduler: releasing an offloaded sequence's decode KV", decode_pool_->release(t.from));
  table_.kv_moved(t.id, t.to.epoch);
  offloaded_.insert(t.id);
  ++offloaded_total_;
  pd_.bytes += t.bytes;
  pd_.f32_bytes += t.f32_bytes;
  pd_.transfer_s += t.ms / 1000.0;
  out_.push_back(adopt_sequence{worker_kind::offload, std::move(s.seq), std::move(t.to)});
  admit();
}

void scheduler::offload_lost(uint64_t id) {
  // The transfer worker died with an offload job: the decode-pool KV is intact; the sequence goes
  // back to the decode worker.
  auto it = transit_.find(id);
  held_sequence s = std::move(it->second);
  transit_.erase(it);
  offload_pool_->release_epoch(s.to_epoch);
  mark_down(worker_kind::transfer);
  ++offload_refused_;
  if (s.cancelled) {
    ignore_error("scheduler: releasing a cancelled sequence's KV", decode_pool_->release(s.kv));
    table_.finished({id});
    return;
  }
  adopt(std::move(s));
}

}  // namespace fw
