#include "runtime/sched/scheduler.hpp"

#include <algorithm>
#include <utility>

#include "runtime/base/log.hpp"
#include "runtime/sched/admission.hpp"
#include "runtime/supervise/degradation_policy.hpp"

namespace fw {

const char* to_string(worker_kind k) {
  switch (k) {
    case worker_kind::prefill: return "prefill";
    case worker_kind::fallback: return "fallback";
    case worker_kind::transfer: return "transfer";
    case worker_kind::decode: return "decode";
    case worker_kind::offload: return "offload";
  }
  return "?";
}

const char* to_string(request_stage s) {
  switch (s) {
    case request_stage::unknown: return "unknown";
    case request_stage::waiting: return "waiting";
    case request_stage::prefilling: return "prefilling";
    case request_stage::staged: return "staged";
    case request_stage::transferring: return "transferring";
    case request_stage::decoding: return "decoding";
    case request_stage::parked: return "parked";
    case request_stage::offloading: return "offloading";
    case request_stage::offloaded: return "offloaded";
  }
  return "?";
}

namespace {

scheduler_limits table_limits(const scheduler::setup& s) {
  scheduler_limits lim;
  lim.max_running = s.max_batch;
  lim.max_queue = s.max_queue;
  lim.total_kv_blocks = s.decode_pool->total_blocks();
  lim.request_timeout_s = s.request_timeout_s;
  return lim;
}

kv_block_pool* prefill_pool_of(const scheduler::setup& s) { return s.prefill_pool ? s.prefill_pool : s.decode_pool; }

}  // namespace

scheduler::scheduler(setup s)
    : decode_pool_(s.decode_pool),
      prefill_pool_(prefill_pool_of(s)),
      offload_pool_(s.offload_pool),
      cfg_(std::move(s)),
      clock_(cfg_.clock ? cfg_.clock : clock_fn(steady_seconds)),
      table_(table_limits(cfg_)),
      cache_(prefill_pool_->layout().block_tokens, cfg_.prefix_cache_blocks) {
  if (cfg_.rollout) rollout_.emplace(*cfg_.rollout);
}

scheduler::~scheduler() {
  for (auto& h : cache_.evict_all()) (void)prefill_pool_->release(h);
}

scheduler_actions scheduler::flush() { return std::exchange(out_, {}); }

// -- events --

scheduler_actions scheduler::submit(client_request req) {
  if (auto ok = req.params.validate(); !ok) return reject(req.id, ok.err()), flush();
  auto budget = admit_request(req.prompt, cfg_.n_vocab, cfg_.n_ctx, req.params.max_tokens);
  if (!budget) return reject(req.id, budget.err()), flush();
  if (requests_.count(req.id)) return reject(req.id, make_error(errc::invalid_argument, "duplicate request id")), flush();
  const auto n = static_cast<uint32_t>(req.prompt.size());
  const uint32_t blocks = decode_pool_->layout().blocks_for_tokens(n + *budget);
  if (auto ok = table_.submit(req.id, n, *budget, blocks, now()); !ok) return reject(req.id, ok.err()), flush();
  uint32_t stage = 4;
  if (rollout_) {
    stage = rollout_->assign(req.id);
    if (stage < 2) req.params.max_draft_k = 0;  // stage 1: quantization only, no speculation
  }
  const uint64_t id = req.id;
  requests_.emplace(id, held_request{std::move(req), {}, 0, stage, now()});
  admit();
  return flush();
}

scheduler_actions scheduler::cancel(uint64_t id) {
  switch (table_.cancel(id)) {
    case request_table::cancel_outcome::unknown:
      return flush();
    case request_table::cancel_outcome::removed:
      requests_.erase(id);
      break;
    case request_table::cancel_outcome::release_later:
      break;  // its KV is released when the prefill (or transfer) replies
    case request_table::cancel_outcome::cancel_in_decode:
      // The worker holding it frees the KV (a sequence in transit: when its transfer replies).
      if (auto t = transit_.find(id); t != transit_.end()) t->second.cancelled = true;
      else if (!drop_parked(id)) send_cancel(id);
      requests_.erase(id);
      break;
  }
  admit();
  return flush();
}

scheduler_actions scheduler::prefill_finished(worker_kind worker, prefill_done d) {
  prefill_chunks_ += d.chunks;
  prefill_chunk_rows_ += d.rows;
  if (physical() && worker == worker_kind::prefill) prefilled_remote(d);
  else prefilled_local(d);
  return flush();
}

scheduler_actions scheduler::prefill_failed(uint64_t id, worker_kind worker, uint64_t generation, bool receiver_down,
                                            error e) {
  if (physical() && worker == worker_kind::prefill) prefill_remote_failed(id, generation, receiver_down, e);
  else prefill_local_failed(id, worker, generation, receiver_down, std::move(e));
  return flush();
}

scheduler_actions scheduler::transfer_finished(transfer_done t) {
  if (transit_.count(t.id)) offloaded(t);
  else transferred(t);
  return flush();
}

scheduler_actions scheduler::transfer_failed(uint64_t id, bool receiver_down, error e) {
  if (transit_.count(id)) offload_lost(id);
  else transfer_lost(id, receiver_down, e);
  return flush();
}

void scheduler::transfer_lost(uint64_t id, bool receiver_down, const error& e) {
  // The transfer worker died with the job: both handles are released by epoch and the request
  // goes back to waiting (its KV is recomputed).
  if (auto it = staged_.find(id); it != staged_.end()) {
    prefill_pool_->release_epoch(it->second.prefill_epoch);
    staged_.erase(it);
  }
  if (receiver_down) mark_down(worker_kind::transfer);
  const auto f = table_.prefill_failed(id, true, now());
  if (f.epoch) decode_pool_->release_epoch(f.epoch);
  if (!f.requeued && f.known && !f.was_cancelled) fail(id, e);
  if (!f.requeued) requests_.erase(id);
  admit();
}

scheduler_actions scheduler::offload_requested(uint64_t id, kv_handle kv, uint32_t remaining, carried_sequence seq) {
  const request_record* r = table_.find(id);
  if (!r || r->cancelled) {  // cancelled meanwhile (the decode worker no longer had it)
    ignore_error("scheduler: releasing a cancelled sequence's KV", decode_pool_->release(kv));
    table_.finished({id});
    return flush();
  }
  std::optional<kv_handle> to;
  if (offload_pool_ && worker_running(worker_kind::offload) && worker_running(worker_kind::transfer))
    to = offload_pool_->allocate(kv.n_tokens + remaining + 1);
  held_sequence s{id, kv, std::move(seq), 0, false};
  if (!to) {
    ++offload_refused_;
    adopt(std::move(s));
    return flush();
  }
  s.to_epoch = to->epoch;
  transit_[id] = std::move(s);
  out_.push_back(run_transfer{transfer_job{id, kv, *to}});
  return flush();
}

scheduler_actions scheduler::finished(finished_ids f) {
  for (uint64_t id : f.ids) offloaded_.erase(id);
  table_.finished(f.ids);
  for (uint64_t id : f.ids) {
    if (auto it = requests_.find(id); it != requests_.end()) record_outcome(it->second, false);
    requests_.erase(id);
  }
  // Finished sequences' KV (prompt and answer): whole blocks into the prefix cache, the rest freed.
  const uint32_t bt = cache_.block_tokens();
  for (size_t i = 0; i < f.kvs.size(); ++i) {
    kv_handle& h = f.kvs[i];
    const auto& tokens = i < f.kv_tokens.size() ? f.kv_tokens[i] : std::vector<int32_t>{};
    const uint32_t n = std::min<uint32_t>(h.n_tokens, static_cast<uint32_t>(tokens.size())) / bt * bt;
    if (n == 0 || !decode_pool_->truncate(h, n)) {
      ignore_error("scheduler: releasing a finished sequence's KV", decode_pool_->release(h));
      continue;
    }
    release_cached(cache_.insert(std::span<const int32_t>(tokens.data(), n), std::move(h), ++cache_tick_));
  }
  admit();
  return flush();
}

scheduler_actions scheduler::decode_failed(const sequence_failures& f) {
  for (uint64_t id : f.ids) offloaded_.erase(id);
  for (size_t i = 0; i < f.ids.size(); ++i)
    if (table_.failed(f.ids[i]))
      fail(f.ids[i], make_error(static_cast<errc>(i < f.codes.size() ? f.codes[i] : uint8_t(errc::internal)),
                                i < f.messages.size() ? f.messages[i] : std::string()));
  admit();
  return flush();
}

scheduler_actions scheduler::progress(const step_tokens& t) {
  for (size_t i = 0; i < t.ids.size() && i < t.tokens.size(); ++i)
    if (auto it = requests_.find(t.ids[i]); it != requests_.end()) it->second.generated.push_back(t.tokens[i]);
  for (size_t i = 0; i < t.draft_ids.size() && i < t.draft_failed.size(); ++i)
    if (auto it = requests_.find(t.draft_ids[i]); it != requests_.end()) {
      ++it->second.proposals;
      it->second.draft_failures += t.draft_failed[i];
    }
  if (t.fit.steps > 0) {
    predictor_.adopt(t.fit);  // the decode worker's fit: measured once, there
    if (admission_held_) admit();  // the batch may have room now
  }
  return flush();
}

scheduler_actions scheduler::worker_up(worker_kind worker, bool restarted) {
  auto& w = workers_[index(worker)];
  w.up = true;
  ++w.generation;
  if (restarted) ++worker_restarts_;
  if (worker == worker_kind::decode) {
    // Jobs and sequences that became ready while it was down.
    for (auto& job : parked_jobs_) out_.push_back(run_decode{std::move(job)});
    parked_jobs_.clear();
    auto seqs = std::exchange(parked_sequences_, {});
    for (auto& s : seqs) adopt(std::move(s));
  }
  admit();
  return flush();
}

scheduler_actions scheduler::worker_lost(worker_kind worker, const std::string& reason) {
  mark_down(worker);
  if (worker == worker_kind::decode) {
    // Sequences on the offload device, moving there or parked are not the dead worker's.
    auto held = [this](uint64_t i) { return !offloaded_.count(i) && !transit_.count(i) && !is_parked(i); };
    release_lost(table_.requeue_decoding(held, now()), *decode_pool_, "decode", reason);
  } else if (worker == worker_kind::offload && offload_pool_) {
    auto lost = table_.requeue_decoding([&](uint64_t i) { return offloaded_.count(i) > 0; }, now());
    for (const auto& l : lost) offloaded_.erase(l.first);
    release_lost(lost, *offload_pool_, "offload decode", reason);
  }
  // Prefill and transfer jobs fail over or requeue through their own failure events.
  admit();
  return flush();
}

scheduler_actions scheduler::degrade(uint8_t state, std::string why) {
  degradation_ = state;
  degradation_reason_ = std::move(why);
  if (state < static_cast<uint8_t>(degradation_state::cpu_fallback)) return flush();
  std::vector<uint64_t> ids;
  for (const auto& [id, sr] : staged_)
    if (sr.on_prefill_device && !sr.failed_over) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (uint64_t id : ids) {
    const request_record* r = table_.find(id);
    if (r && !r->cancelled) fail_over(id, staged_.at(id), "degraded (cpu-fallback): " + degradation_reason_);
  }
  return flush();
}

scheduler_actions scheduler::tick() {
  const double t = now();
  // The prefill device runs its jobs in admission order: the oldest pending one is running
  // (since the last reply, or its admission), the others wait.
  std::vector<std::pair<double, uint64_t>> pending;
  for (const auto& [id, sr] : staged_)
    if (sr.on_prefill_device) pending.emplace_back(sr.admitted_s, id);
  std::sort(pending.begin(), pending.end());
  const double deadline = cfg_.prefill_deadline_s;
  std::vector<uint64_t> overdue;
  for (size_t i = 0; i < pending.size(); ++i) {
    const staged_request& sr = staged_.at(pending[i].second);
    if (sr.failed_over) continue;
    const bool late = i == 0 ? running_prefill_overdue(std::max(sr.admitted_s, pd_.last_reply_s), sr.prompt_tokens,
                                                       pd_.prefill_rate, t, deadline)
                             : prefill_overdue(sr.admitted_s, t, deadline);
    if (late) overdue.push_back(pending[i].second);
  }
  for (uint64_t id : overdue) {
    const request_record* r = table_.find(id);
    if (r && !r->cancelled)
      fail_over(id, staged_.at(id), "not prefilled within the " + std::to_string(deadline) + " s deadline");
  }
  for (const auto& [id, phase] : table_.expire(t)) {
    out_.push_back(fail_request{id, make_error(errc::timed_out, "request did not finish within " +
                                                                   std::to_string(static_cast<int>(cfg_.request_timeout_s)) +
                                                                   " s")});
    if (phase == request_phase::decoding) {
      if (auto tr = transit_.find(id); tr != transit_.end()) tr->second.cancelled = true;
      else if (!drop_parked(id)) send_cancel(id);
    }
    if (phase != request_phase::prefilling) requests_.erase(id);
  }
  admit();
  return flush();
}

// -- queries --

request_stage scheduler::stage_of(uint64_t id) const {
  if (transit_.count(id)) return request_stage::offloading;
  if (offloaded_.count(id)) return request_stage::offloaded;
  if (is_parked(id)) return request_stage::parked;
  const request_record* r = table_.find(id);
  if (!r) return request_stage::unknown;
  switch (r->phase) {
    case request_phase::waiting: return request_stage::waiting;
    case request_phase::decoding: return request_stage::decoding;
    case request_phase::prefilling: break;
  }
  auto it = staged_.find(id);
  if (it == staged_.end() || it->second.failed_over) return request_stage::prefilling;
  return it->second.transferring ? request_stage::transferring : request_stage::staged;
}

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
    if (stage4 && physical() && route(history) == prefill_route::physical) {
      if (auto p = prefill_pool_->allocate(static_cast<uint32_t>(history.size()))) {
        const uint32_t reused = reuse_prefix(history, *p);
        staged_request sr;
        sr.decode_kv = std::move(*h);
        sr.prefill_epoch = p->epoch;
        sr.prompt_tokens = static_cast<uint32_t>(history.size()) - reused;
        sr.admitted_s = now();
        sr.on_prefill_device = true;
        staged_[id] = std::move(sr);
        send_prefill(worker_kind::prefill,
                     prefill_job{id, std::vector<int32_t>(history.begin() + reused, history.end()), std::move(*p)});
        continue;
      }
    }
    const uint32_t reused = reuse_prefix(history, *h);
    send_prefill(physical() ? worker_kind::fallback : worker_kind::prefill,
                 prefill_job{id, std::vector<int32_t>(history.begin() + reused, history.end()), std::move(*h)});
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

uint32_t scheduler::reuse_prefix(std::span<const int32_t> history, kv_handle& kv) {
  // Copies the longest cached prefix of history into kv (either pool); returns the tokens reused.
  if (cfg_.prefix_cache_blocks == 0) return 0;
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
  if (auto it = requests_.find(id); it != requests_.end() && it->second.stage < 3) job.chunk = 1u << 16;
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
  const auto& held = requests_.at(id);
  const request_record& r = *table_.find(id);
  decode_job job{id,          held.req.prompt, held.req.params, r.budget,           std::move(kv),
                 entropy,     prefilled_s,     held.generated,  held.stage >= 4};
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
      const uint32_t reused = reuse_prefix(history, t.to);
      send_prefill(worker_kind::fallback,
                   prefill_job{t.id, std::vector<int32_t>(history.begin() + reused, history.end()), std::move(t.to)});
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
  const uint32_t reused = reuse_prefix(history, kv);
  send_prefill(worker_kind::fallback,
               prefill_job{id, std::vector<int32_t>(history.begin() + reused, history.end()), std::move(kv)});
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

// -- workers and sequences --

bool scheduler::is_current(worker_kind w, uint64_t generation) const {
  const auto& slot = workers_[index(w)];
  return generation != 0 && slot.up && slot.generation == generation;
}

bool scheduler::is_parked(uint64_t id) const {
  for (const auto& j : parked_jobs_)
    if (j.id == id) return true;
  for (const auto& s : parked_sequences_)
    if (s.id == id) return true;
  return false;
}

bool scheduler::drop_parked(uint64_t id) {
  // A parked decode job or sequence of a request that will not decode: its KV is freed here.
  for (auto it = parked_jobs_.begin(); it != parked_jobs_.end(); ++it)
    if (it->id == id) {
      ignore_error("scheduler: releasing a parked job's KV", decode_pool_->release(it->kv));
      parked_jobs_.erase(it);
      return true;
    }
  for (auto it = parked_sequences_.begin(); it != parked_sequences_.end(); ++it)
    if (it->id == id) {
      ignore_error("scheduler: releasing a parked sequence's KV", decode_pool_->release(it->kv));
      parked_sequences_.erase(it);
      return true;
    }
  return false;
}

void scheduler::adopt(held_sequence s) {
  // A running sequence goes (back) to the decode worker, or waits for its replacement.
  if (worker_running(worker_kind::decode)) out_.push_back(adopt_sequence{worker_kind::decode, std::move(s.seq), {}});
  else parked_sequences_.push_back(std::move(s));
}

void scheduler::send_cancel(uint64_t id) {
  const worker_kind w = offloaded_.count(id) ? worker_kind::offload : worker_kind::decode;
  if (worker_running(w)) out_.push_back(cancel_decode{w, id});
}

void scheduler::release_lost(const std::vector<std::pair<uint64_t, uint32_t>>& lost, kv_block_pool& from,
                             const char* worker, const std::string& reason) {
  if (lost.empty()) return;
  for (const auto& [id, epoch] : lost) from.release_epoch(epoch);
  log_warn("the " + std::string(worker) + " worker died (" + reason + "); " + std::to_string(lost.size()) +
           " request(s) it held are re-admitted from their token history");
}

uint8_t scheduler::transfer_wire() const {
  // [supervisor] degraded_kv_transfer over a degraded link when one is set, else as configured.
  const bool degraded = degradation_ >= static_cast<uint8_t>(degradation_state::link_degraded);
  return degraded && cfg_.degraded_kv_wire ? *cfg_.degraded_kv_wire : uint8_t{255};
}

// -- outcomes --

void scheduler::fail(uint64_t id, const error& e) {
  if (auto it = requests_.find(id); it != requests_.end() && e.code != errc::cancelled) record_outcome(it->second, true);
  requests_.erase(id);
  out_.push_back(fail_request{id, e});
}

void scheduler::reject(uint64_t id, const error& e) {
  // A request refused before it entered the table.
  ++rejected_;
  out_.push_back(fail_request{id, e});
}

void scheduler::record_outcome(const held_request& h, bool error) {
  // A request ended (served with its stage's levers): the breaker may move the rollout on.
  if (!rollout_) return;
  rollout_outcome o;
  o.error = error;
  o.proposals = h.proposals;
  o.draft_failures = h.draft_failures;
  o.per_token_s = (now() - h.submitted_s) / static_cast<double>(std::max<size_t>(1, h.generated.size()));
  if (rollout_->record(h.stage, o, now())) {
    const auto& d = rollout_->decisions().back();
    const std::string line = "rollout: stage " + std::to_string(d.from) + " -> " + std::to_string(d.to) + " (" +
                             rollout_stage_name(d.to) + "): " + d.reason;
    if (d.to < d.from) log_warn(line);  // the breaker tripped
    else log_info(line);                // an advance
  }
}

}  // namespace fw
