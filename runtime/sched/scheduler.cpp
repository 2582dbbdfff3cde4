#include "runtime/sched/scheduler.hpp"

#include <algorithm>
#include <iterator>
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
    case worker_kind::draft: return "draft";
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

scheduler_actions scheduler::flush() {
  pump_prefills();
  return std::exchange(out_, {});
}

// -- events --

scheduler_actions scheduler::submit(client_request req) {
  if (auto ok = req.params.validate(); !ok) return reject(req.id, ok.err()), flush();
  if (auto ok = req.params.validate_token_ids(cfg_.n_vocab); !ok) return reject(req.id, ok.err()), flush();
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
  handing_over_.erase(id);  // a cancel, not a miss
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
  if (!d.prompt_logprobs.empty())
    if (auto it = requests_.find(d.id); it != requests_.end()) {
      auto& into = it->second.prompt_logprobs;
      into.insert(into.end(), std::make_move_iterator(d.prompt_logprobs.begin()),
                  std::make_move_iterator(d.prompt_logprobs.end()));
    }
  if (prefill_slice_done(worker, d)) return flush();
  if (physical() && worker == worker_kind::prefill) prefilled_remote(d);
  else prefilled_local(d);
  return flush();
}

scheduler_actions scheduler::prefill_failed(uint64_t id, worker_kind worker, uint64_t generation, bool receiver_down,
                                            error e) {
  prefill_slice_failed(worker, id);
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
  handing_over_.erase(id);
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
  for (uint64_t id : f.ids) {
    offloaded_.erase(id);
    hand_over_ended(id);
  }
  table_.finished(f.ids);
  for (uint64_t id : f.ids) {
    if (auto it = requests_.find(id); it != requests_.end()) record_outcome(it->second, false);
    requests_.erase(id);
  }
  // Finished sequences' KV (prompt and answer), handed back by their worker: whole blocks of the
  // decode pool into the prefix cache (when it lives there: co-located), the rest released.
  const uint32_t bt = cache_.block_tokens();
  const bool caching = cfg_.prefix_cache_blocks > 0 && !physical();
  for (size_t i = 0; i < f.kvs.size(); ++i) {
    kv_handle& h = f.kvs[i];
    const auto& tokens = i < f.kv_tokens.size() ? f.kv_tokens[i] : std::vector<int32_t>{};
    const uint32_t n = std::min<uint32_t>(h.n_tokens, static_cast<uint32_t>(tokens.size())) / bt * bt;
    if (!caching || h.pool_id != decode_pool_->pool_id() || n == 0 || !decode_pool_->truncate(h, n)) {
      release_returned(h, "scheduler: releasing a finished sequence's KV");
      continue;
    }
    release_cached(cache_.insert(std::span<const int32_t>(tokens.data(), n), std::move(h), ++cache_tick_));
  }
  admit();
  return flush();
}

scheduler_actions scheduler::decode_failed(const sequence_failures& f) {
  for (kv_handle h : f.kvs) release_returned(h, "scheduler: releasing a failed sequence's KV");
  for (uint64_t id : f.ids) {
    offloaded_.erase(id);
    hand_over_ended(id);
  }
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
  if (t.step_s > 0 && t.rows > 0) {  // a step of the decode device
    predictor_.observe(static_cast<double>(t.sum_context), t.rows, cfg_.n_layer, t.step_s);
    if (admission_held_) admit();  // the batch may have room now
    consider_offload();
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
    handing_over_.clear();  // the dead worker will not answer; its sequences are re-admitted
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
    handing_over_.erase(id);
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

// -- workers and sequences --

void scheduler::release_returned(kv_handle& h, const char* what) {
  // A handle a worker handed back: into the pool it names (decode, prefill or offload).
  for (kv_block_pool* p : {decode_pool_, prefill_pool_, offload_pool_})
    if (p && p->pool_id() == h.pool_id) {
      ignore_error(what, p->release(h));
      return;
    }
  ignore_error(what, make_error(errc::internal, "a handle of an unknown pool " + std::to_string(h.pool_id)));
}

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

void scheduler::hand_over_ended(uint64_t id) {
  // The sequence ended (finished or failed) before the hand-over asked for it reached its worker.
  if (handing_over_.erase(id)) ++offload_missed_;
}

void scheduler::consider_offload() {
  // offload_policy over the decode device's sequences as the scheduler knows them: generated
  // tokens, KV length (history minus the next input), what each may still generate; rollout
  // stages below 4 stay where they are.
  if (!offload_pool_ || !worker_running(worker_kind::offload) || !worker_running(worker_kind::transfer) ||
      !worker_running(worker_kind::decode))
    return;
  std::vector<offload_candidate> cands;
  double sum_context = 0, rows = 0;
  for (const auto& [id, h] : requests_) {
    const request_record* r = table_.find(id);
    if (!r || r->phase != request_phase::decoding || offloaded_.count(id) || transit_.count(id) || is_parked(id))
      continue;
    const auto generated = static_cast<uint32_t>(h.generated.size());
    const auto kv_tokens = static_cast<uint32_t>(h.req.prompt.size()) + generated - 1;
    sum_context += kv_tokens + 1;  // the whole batch's contexts, pinned sequences too
    ++rows;
    if (h.stage < 4 || handing_over_.count(id)) continue;
    cands.push_back({id, generated, kv_tokens, r->budget > generated ? r->budget - generated : 0});
  }
  if (cands.empty()) return;
  offload_step step;
  if (predictor_.fitted() && cfg_.offload.max_step_s > 0) {
    step.predicted_s = predictor_.step_seconds(sum_context, rows, cfg_.n_layer);
    step.per_token_s = predictor_.a();
    step.per_row_s = predictor_.b() * cfg_.n_layer;
  }
  const double free_share =
      decode_pool_->total_blocks() ? double(decode_pool_->free_blocks()) / decode_pool_->total_blocks() : 0.0;
  for (uint64_t id : choose_offload(std::move(cands), free_share, offload_pool_->free_blocks(),
                                    offload_pool_->layout().block_tokens, cfg_.offload, step)) {
    handing_over_.insert(id);
    ++offload_asked_;
    out_.push_back(hand_over{worker_kind::decode, id});
  }
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
