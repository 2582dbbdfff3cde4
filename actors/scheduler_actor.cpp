#include "actors/scheduler_actor.hpp"

#include "actors/scheduler_stats_of.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>

#include "actors/protocol/errc_error.hpp"
#include "runtime/base/log.hpp"
#include "runtime/sched/admission.hpp"
#include "runtime/sched/route_policy.hpp"

namespace fw::actors {
namespace {

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

constexpr auto tick_interval = std::chrono::milliseconds(200);

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The handlers: each asks the request table what to do and does it.
class scheduler_logic {
 public:
  scheduler_logic(self_ptr self, const engine_context* ctx) : self_(self), ctx_(ctx) {}

  void fail(uint64_t id, const error& e) {
    if (auto it = st().requests.find(id); it != st().requests.end() && e.code != errc::cancelled) record_outcome(it->second, true);
    st().requests.erase(id);
    self_->send(st().front_door, fail_atom::value, request_failure{id, static_cast<uint8_t>(e.code), e.message});
  }

  void submit(client_request& req) {
    if (auto ok = req.params.validate(); !ok) return reject(req.id, ok.err());
    auto budget = admit_request(req.prompt, ctx_->m->config().n_vocab, ctx_->limits.n_ctx, req.params.max_tokens);
    if (!budget) return reject(req.id, budget.err());
    if (st().requests.count(req.id)) return reject(req.id, make_error(errc::invalid_argument, "duplicate request id"));
    const auto n = static_cast<uint32_t>(req.prompt.size());
    const uint32_t blocks = pool().layout().blocks_for_tokens(n + *budget);
    if (auto ok = st().table.submit(req.id, n, *budget, blocks, now_s()); !ok) return reject(req.id, ok.err());
    uint32_t stage = 4;
    if (st().rollout) {
      stage = st().rollout->assign(req.id);
      if (stage < 2) req.params.max_draft_k = 0;  // stage 1: quantization only, no speculation
    }
    st().requests.emplace(req.id, scheduler_state::held_request{std::move(req), {}, 0, stage, now_s()});
    admit();
  }

  /// What a request's prefill writes: its prompt and the tokens it had generated before a worker
  /// died, all but the last (the first decode step's input).
  std::vector<int32_t> prefill_history(uint64_t id) {
    const auto& held = st().requests.at(id);
    std::vector<int32_t> h = held.req.prompt;
    h.insert(h.end(), held.generated.begin(), held.generated.end());
    h.pop_back();
    return h;
  }

  /// Prefix-cache entries go back to the cache's pool (the prefill device's).
  void release_all(std::vector<kv_handle> handles) {
    for (auto& h : handles) ignore_error("scheduler: releasing a prefix-cache entry", cache_pool().release(h));
  }

  bool ready() const {
    const auto& s = self_->state;
    // With a prefill/decode pair, prompts go co-located while the prefill device's worker or the
    // transfer worker is being restarted.
    return s.decode && (ctx_->physical() ? static_cast<bool>(s.fallback) : static_cast<bool>(s.prefill));
  }

  /// Free blocks admission may plan with: the decode pool holds every request's worst case; with
  /// a separate prefill device its pool must also hold the prompt (conservatively the same).
  uint32_t admission_blocks() {
    uint32_t free = pool().free_blocks();
    if (ctx_->physical()) free = std::min(free, cache_pool().free_blocks());
    return free;
  }

  void admit() {
    if (!ready()) return;
    const auto t0 = std::chrono::steady_clock::now();
    const uint32_t room = predicted_room();
    auto ids = st().table.admit(admission_blocks(), room);
    if (!ids.empty()) record_decision(t0);
    if (ids.empty() && room > 0 && st().table.counts().waiting > 0 && st().cache.stats().blocks > 0) {
      // Requests wait while cached prefixes hold blocks: running requests come first.
      release_all(st().cache.evict_all());
      ids = st().table.admit(admission_blocks(), room);
    }
    st().admission_held = room != UINT32_MAX && st().table.counts().waiting > 0;
    if (room == 0 && st().table.counts().waiting > 0) ++st().admission_holds;
    for (uint64_t id : ids) {
      const request_record& r = *st().table.find(id);
      auto h = pool().allocate(r.prompt_tokens + r.budget);
      if (!h) {  // the table saw enough free blocks; only a foreign allocation could cause this
        st().table.allocation_failed(id);
        fail(id, make_error(errc::out_of_memory, "KV cache pool exhausted while admitting the request"));
        continue;
      }
      st().table.started(id, h->epoch);
      // The last prompt token is the first decode step's input: never prefilled.
      const std::vector<int32_t> history = prefill_history(id);
      const bool stage4 = st().requests.at(id).stage >= 4;  // physical PD is rollout stage 4
      if (!stage4 && ctx_->physical()) {
        ++st().pd.co_located;
        st().pd.last_reason = "rollout: stage " + std::to_string(st().requests.at(id).stage) + " has no physical PD";
      }
      if (stage4 && ctx_->physical() && route(id, history) == prefill_route::physical) {
        auto p = cache_pool().allocate(static_cast<uint32_t>(history.size()));
        if (p) {
          const uint32_t reused = reuse_prefix(history, *p);
          staged_request sr;
          sr.decode_kv = std::move(*h);
          sr.prefill_epoch = p->epoch;
          sr.prompt_tokens = static_cast<uint32_t>(history.size()) - reused;
          sr.admitted_s = now_s();
          sr.on_prefill_device = true;
          st().staged[id] = std::move(sr);
          send_prefill(st().prefill, prefill_job{id, std::vector<int32_t>(history.begin() + reused, history.end()), std::move(*p)},
                       true);
          continue;
        }
      }
      const uint32_t reused = reuse_prefix(history, *h);
      send_prefill(ctx_->physical() ? st().fallback : st().prefill,
                   prefill_job{id, std::vector<int32_t>(history.begin() + reused, history.end()), std::move(*h)}, false);
    }
  }

  /// The global route of one request (separate devices only).
  prefill_route route(uint64_t, std::span<const int32_t> history) {
    const auto t0 = std::chrono::steady_clock::now();
    route_inputs in;
    in.separate_devices = true;
    in.prefill_device_up = st().prefill && st().transfer;
    in.prompt_blocks = cache_pool().layout().blocks_for_tokens(static_cast<uint32_t>(history.size()));
    in.prefill_free_blocks = cache_pool().free_blocks();
    for (const auto& [id, sr] : st().staged)
      if (sr.on_prefill_device && !sr.failed_over) in.queued_tokens += sr.prompt_tokens;
    in.prompt_tokens = static_cast<uint32_t>(history.size());
    in.prefill_tokens_per_s = st().pd.prefill_rate;
    in.deadline_s = ctx_->limits.prefill_deadline_s;
    auto d = choose_route(in);
    if (d.route == prefill_route::physical && st().degradation >= static_cast<uint8_t>(degradation_state::co_located)) {
      d.route = prefill_route::co_located;
      d.reason = std::string("degraded (") + to_string(static_cast<degradation_state>(st().degradation)) +
                 "): " + st().degradation_reason;
    }
    record_decision(t0);
    if (d.route == prefill_route::physical) {
      ++st().pd.physical;
    } else {
      ++st().pd.co_located;
      st().pd.last_reason = d.reason;
    }
    return d.route;
  }

  /// One scheduling decision (an admission pass, a route) took from t0 until now.
  void record_decision(std::chrono::steady_clock::time_point t0) {
    const float us = std::chrono::duration<float, std::micro>(std::chrono::steady_clock::now() - t0).count();
    auto& d = st().decision_us;
    if (d.size() < scheduler_state::decision_window) d.push_back(us);
    else d[st().decisions % scheduler_state::decision_window] = us;
    ++st().decisions;
  }

  /// Copies the longest cached prefix of history into kv (any pool); returns the tokens reused.
  uint32_t reuse_prefix(std::span<const int32_t> history, kv_handle& kv) {
    if (ctx_->limits.prefix_cache_blocks == 0) return 0;
    const auto m = st().cache.lookup(history, ++st().tick);
    kv_block_pool& dst = kv.pool_id == pool().pool_id() ? pool() : cache_pool();
    if (m.tokens > 0 && dst.copy_tokens(cache_pool(), *m.kv, kv, m.tokens)) return m.tokens;
    return 0;
  }

  /// remote: the job runs on the prefill device of a physical pair (its reply goes to transfer).
  void send_prefill(const prefill_actor& target, prefill_job job, bool remote) {
    auto* self = self_;
    const auto* ctx = ctx_;
    const uint64_t id = job.id;
    // Below rollout stage 3 (logical PD) a prompt runs as one forward, as without separation.
    if (auto it = st().requests.find(id); it != st().requests.end() && it->second.stage < 3) job.chunk = 1u << 16;
    if (!target) {  // the worker is being restarted: as if the job had reached a dead worker
      const caf::error down = caf::sec::request_receiver_down;
      // The job's KV is released by its epoch there, as for a job that died with its worker.
      remote ? prefill_remote_failed(id, target, down) : prefill_failed(id, target, down);
      return;
    }
    self_->request(target, caf::infinite, prefill_atom::value, std::move(job))
        .then(
            [self, ctx, remote](prefill_done& d) {
              scheduler_logic l(self, ctx);
              remote ? l.prefilled_remote(d) : l.prefilled(d);
            },
            [self, ctx, id, target, remote](caf::error& err) {
              scheduler_logic l(self, ctx);
              remote ? l.prefill_remote_failed(id, target, err) : l.prefill_failed(id, target, err);
            });
  }

  /// Copies the prompt's whole blocks (kv in pool src) into a cache entry (the owner keeps kv).
  void remember_prefix(const std::vector<int32_t>& prompt, const kv_handle& kv, const kv_block_pool& src) {
    const uint32_t bt = st().cache.block_tokens();
    const uint32_t n = kv.n_tokens / bt * bt;
    if (ctx_->limits.prefix_cache_blocks == 0 || n == 0) return;
    const std::span<const int32_t> history(prompt.data(), std::min<size_t>(prompt.size(), n));
    if (st().cache.find(history).tokens == n) return;  // cached already
    kv_handle copy;
    if (!cache_pool().copy_tokens(src, kv, copy, n)) return;  // no free blocks: nothing cached
    release_all(st().cache.insert(history, std::move(copy), ++st().tick));
  }

  /// A prefill into the decode pool finished (co-located, or the fallback of a physical pair).
  void prefilled(prefill_done& d) {
    st().prefill_chunks += d.chunks;
    st().prefill_chunk_rows += d.rows;
    if (st().table.prefilled(d.id) == request_table::after_prefill::release) {
      ignore_error("scheduler: releasing a cancelled request's KV", pool().release(d.kv));
      st().requests.erase(d.id);
      admit();
      return;
    }
    remember_prefix(st().requests.at(d.id).req.prompt, d.kv, pool());
    start_decode(d.id, std::move(d.kv), d.attention_entropy, d.done_s);
  }

  void start_decode(uint64_t id, kv_handle kv, float entropy, double prefilled_s) {
    auto& held = st().requests.at(id);
    const request_record& r = *st().table.find(id);
    decode_job job{id,          held.req.prompt, held.req.params, r.budget,           std::move(kv),
                   entropy,     prefilled_s,     held.generated,  held.stage >= 4};
    if (!st().decode) {  // its worker is being restarted: the job waits for the replacement
      st().parked.push_back(std::move(job));
      return;
    }
    self_->send(st().decode, decode_atom::value, std::move(job));
  }

  /// The prefill device finished a prompt (d.kv in its pool): move the KV to the decode device.
  void prefilled_remote(prefill_done& d) {
    st().prefill_chunks += d.chunks;
    st().prefill_chunk_rows += d.rows;
    auto it = st().staged.find(d.id);
    if (it == st().staged.end()) {
      ignore_error("scheduler: releasing an unknown prefill's KV", cache_pool().release(d.kv));
      return;
    }
    staged_request& sr = it->second;
    sr.on_prefill_device = false;
    st().pd.last_reply_s = now_s();
    st().pd.prefill_rate = update_rate(st().pd.prefill_rate, sr.prompt_tokens, d.ms / 1000.0);
    const request_record* r = st().table.find(d.id);
    if (r && !r->cancelled) remember_prefix(st().requests.at(d.id).req.prompt, d.kv, cache_pool());
    if (sr.failed_over || !r || r->cancelled) {
      // Failed over already (the fallback carries on) or cancelled: this copy is not needed.
      ignore_error("scheduler: releasing a superseded prefill's KV", cache_pool().release(d.kv));
      if (!sr.failed_over) drop_staged(d.id);
      else st().staged.erase(it);
      admit();
      return;
    }
    sr.attention_entropy = d.attention_entropy;
    sr.prefilled_s = d.done_s;
    auto* self = self_;
    const auto* ctx = ctx_;
    const uint64_t id = d.id;
    if (!st().transfer) return transfer_lost(id, caf::sec::request_receiver_down);  // being restarted
    self_->request(st().transfer, caf::infinite, transfer_atom::value, transfer_job{id, std::move(d.kv), std::move(sr.decode_kv), transfer_wire()})
        .then([self, ctx](transfer_done& t) { scheduler_logic(self, ctx).transferred(t); },
              [self, ctx, id](caf::error& err) { scheduler_logic(self, ctx).transfer_lost(id, err); });
  }

  /// A staged request that will not decode (cancelled, expired): its decode reservation goes back.
  void drop_staged(uint64_t id) {
    auto it = st().staged.find(id);
    if (it == st().staged.end()) return;
    ignore_error("scheduler: releasing a dropped request's decode KV", pool().release(it->second.decode_kv));
    st().staged.erase(it);
    if (st().table.prefilled(id) == request_table::after_prefill::release) st().requests.erase(id);
  }

  void transferred(transfer_done& t) {
    ignore_error("scheduler: releasing a transferred prefill KV", cache_pool().release(t.from));
    auto it = st().staged.find(t.id);
    const float entropy = it != st().staged.end() ? it->second.attention_entropy : -1.0f;
    const double prefilled_s = it != st().staged.end() ? it->second.prefilled_s : 0.0;
    if (it != st().staged.end()) st().staged.erase(it);
    const request_record* r = st().table.find(t.id);
    if (!t.error.empty()) {
      ++st().pd.refused;
      log_warn("request " + std::to_string(t.id) + ": " + t.error + "; its prompt is recomputed on the decode device");
      if (r && !r->cancelled) {
        ++st().pd.co_located;
        const std::vector<int32_t> history = prefill_history(t.id);
        const uint32_t reused = reuse_prefix(history, t.to);
        send_prefill(st().fallback, prefill_job{t.id, std::vector<int32_t>(history.begin() + reused, history.end()), std::move(t.to)},
                     false);
        return;
      }
    } else {
      ++st().pd.transfers;
      st().pd.bytes += t.bytes;
      st().pd.f32_bytes += t.f32_bytes;
      st().pd.transfer_s += t.ms / 1000.0;
    }
    if (st().table.prefilled(t.id) == request_table::after_prefill::release) {
      ignore_error("scheduler: releasing a cancelled request's KV", pool().release(t.to));
      st().requests.erase(t.id);
      admit();
      return;
    }
    start_decode(t.id, std::move(t.to), entropy, prefilled_s);
  }

  /// The transfer worker died with the job: both handles are released by epoch and the request
  /// goes back to waiting (its KV is recomputed).
  void transfer_lost(uint64_t id, const caf::error& err) {
    auto it = st().staged.find(id);
    if (it != st().staged.end()) {
      cache_pool().release_epoch(it->second.prefill_epoch);
      st().staged.erase(it);
    }
    if (err == caf::sec::request_receiver_down) st().transfer = transfer_actor{};
    const auto f = st().table.prefill_failed(id, true, now_s());
    if (f.epoch) pool().release_epoch(f.epoch);
    if (!f.requeued && f.known && !f.was_cancelled) fail(id, from_caf_error(err));
    if (!f.requeued) st().requests.erase(id);
    admit();
  }

  /// Moves a staged request's prefill to the decode device (deadline passed or device error).
  void fail_over(uint64_t id, staged_request& sr, const std::string& why) {
    sr.failed_over = true;
    ++st().pd.failovers;
    log_info("request " + std::to_string(id) + ": " + why + "; prefilling it on the decode device");
    const std::vector<int32_t> history = prefill_history(id);
    kv_handle kv = std::move(sr.decode_kv);
    const uint32_t reused = reuse_prefix(history, kv);
    send_prefill(st().fallback, prefill_job{id, std::vector<int32_t>(history.begin() + reused, history.end()), std::move(kv)},
                 false);
  }

  /// A job on the prefill device failed (an error, or its worker died): the request fails over.
  void prefill_remote_failed(uint64_t id, const prefill_actor& target, const caf::error& err) {
    if (err == caf::sec::request_receiver_down && st().prefill == target) st().prefill = prefill_actor{};
    auto it = st().staged.find(id);
    if (it == st().staged.end()) return;
    staged_request& sr = it->second;
    cache_pool().release_epoch(sr.prefill_epoch);  // the handle died with the job
    sr.on_prefill_device = false;
    st().pd.last_reply_s = now_s();
    const request_record* r = st().table.find(id);
    if (sr.failed_over) {
      st().staged.erase(it);
    } else if (!r || r->cancelled) {
      drop_staged(id);
    } else {
      fail_over(id, sr, "the prefill device failed (" + from_caf_error(err).message + ")");
      st().staged.erase(id);
    }
    admit();
  }

  void prefill_failed(uint64_t id, const prefill_actor& target, const caf::error& err) {
    // A job that reached a prefill worker which had already died for another request: this one
    // is innocent and waits for the replacement the supervisor is starting.
    // A job whose worker died on it is retried (request_retries times: a prompt that kills the
    // worker every time must not loop forever).
    const bool receiver_died = err == caf::sec::request_receiver_down;
    if (receiver_died && target && st().prefill == target) st().prefill = prefill_actor{};
    if (receiver_died && target && st().fallback == target) st().fallback = prefill_actor{};
    bool retry = receiver_died;
    if (from_caf_error(err).code == errc::worker_failed && target) {  // it died on this job
      if (st().prefill == target) st().prefill = prefill_actor{};
      if (st().fallback == target) st().fallback = prefill_actor{};
    }
    auto held = st().requests.find(id);
    if (!retry && held != st().requests.end() && from_caf_error(err).code == errc::worker_failed &&
        held->second.retries < ctx_->limits.request_retries) {
      ++held->second.retries;
      retry = true;
      log_warn("request " + std::to_string(id) + ": its prefill worker died on it (" + from_caf_error(err).message +
               "); retry " + std::to_string(held->second.retries) + " of " + std::to_string(ctx_->limits.request_retries));
    }
    const auto f = st().table.prefill_failed(id, retry, now_s());
    if (!f.known) return;
    if (f.epoch) pool().release_epoch(f.epoch);  // the handle died with the job
    if (!f.requeued) {
      if (f.was_cancelled) {
        st().requests.erase(id);
      } else {
        error e = from_caf_error(err);
        if (e.code == errc::worker_failed)
          e.message = "the prefill worker died while running this request " +
                      std::to_string(ctx_->limits.request_retries + 1) + " times (" + e.message + ")";
        fail(id, e);
      }
    }
    admit();
  }

  /// The decode worker handed over a long-tail sequence (offload_policy): move its KV to the
  /// offload device's pool, then give it to that device's worker. When it cannot move (no room,
  /// no worker, a refused stream) it goes back to the decode worker and carries on there.
  void offload_sequence(sequence_box& box) {
    if (!box.h || !box.h->seq) return;
    sequence& seq = *box.h->seq;
    const uint64_t id = seq.id();
    const request_record* r = st().table.find(id);
    if (!r || r->cancelled) {  // cancelled meanwhile (the decode worker no longer had it)
      ignore_error("scheduler: releasing a cancelled sequence's KV", pool().release(seq.kv()));
      st().table.finished({id});
      return;
    }
    std::optional<kv_handle> to;
    if (st().offload && st().transfer) to = offload_pool().allocate(seq.kv().n_tokens + seq.remaining() + 1);
    if (!to) {
      ++st().offload_refused;
      adopt(std::move(box));
      return;
    }
    transfer_job job{id, seq.kv(), *to};
    st().transit[id] = scheduler_state::in_transit{std::move(box), to->epoch, false};
    auto* self = self_;
    const auto* ctx = ctx_;
    self_->request(st().transfer, caf::infinite, transfer_atom::value, std::move(job))
        .then([self, ctx](transfer_done& t) { scheduler_logic(self, ctx).offloaded(t); },
              [self, ctx, id](caf::error&) { scheduler_logic(self, ctx).offload_lost(id); });
  }

  void offloaded(transfer_done& t) {
    auto it = st().transit.find(t.id);
    if (it == st().transit.end()) return;
    auto tr = std::move(it->second);
    st().transit.erase(it);
    sequence& seq = *tr.box.h->seq;
    if (tr.cancelled) {
      ignore_error("scheduler: releasing a cancelled sequence's KV", pool().release(t.from));
      ignore_error("scheduler: releasing a cancelled sequence's offload KV", offload_pool().release(t.to));
      st().table.finished({t.id});
      admit();
      return;
    }
    if (!t.error.empty()) {
      ++st().offload_refused;
      log_warn("request " + std::to_string(t.id) + ": " + t.error + "; it keeps decoding on the decode device");
      ignore_error("scheduler: releasing a refused offload allocation", offload_pool().release(t.to));
      adopt(std::move(tr.box));
      return;
    }
    if (!st().offload) {  // its worker died meanwhile: it carries on on the decode device
      ++st().offload_refused;
      ignore_error("scheduler: releasing an orphaned offload allocation", offload_pool().release(t.to));
      adopt(std::move(tr.box));
      return;
    }
    ignore_error("scheduler: releasing an offloaded sequence's decode KV", pool().release(t.from));
    seq.kv() = std::move(t.to);
    st().table.kv_moved(t.id, seq.kv().epoch);
    st().offloaded.insert(t.id);
    ++st().offloaded_total;
    st().pd.bytes += t.bytes;
    st().pd.f32_bytes += t.f32_bytes;
    st().pd.transfer_s += t.ms / 1000.0;
    self_->send(st().offload, adopt_atom::value, std::move(tr.box));
    admit();
  }

  /// The transfer worker died with an offload job: the decode-pool KV is intact; the sequence
  /// goes back to the decode worker.
  void offload_lost(uint64_t id) {
    auto it = st().transit.find(id);
    if (it == st().transit.end()) return;
    auto tr = std::move(it->second);
    st().transit.erase(it);
    offload_pool().release_epoch(tr.to_epoch);
    st().transfer = transfer_actor{};
    ++st().offload_refused;
    if (tr.cancelled) {
      ignore_error("scheduler: releasing a cancelled sequence's KV", pool().release(tr.box.h->seq->kv()));
      st().table.finished({id});
      return;
    }
    adopt(std::move(tr.box));
  }

  void offload_worker_started(decode_actor a, const std::string& reason) {
    st().offload = std::move(a);
    if (!reason.empty()) ++st().worker_restarts;
    admit();
  }

  void finished(finished_ids& f) {
    for (uint64_t id : f.ids) st().offloaded.erase(id);
    st().table.finished(f.ids);
    for (uint64_t id : f.ids) {
      if (auto it = st().requests.find(id); it != st().requests.end()) record_outcome(it->second, false);
      st().requests.erase(id);
    }
    // Finished sequences' KV (prompt and answer): whole blocks into the prefix cache, the rest freed.
    const uint32_t bt = st().cache.block_tokens();
    for (size_t i = 0; i < f.kvs.size(); ++i) {
      kv_handle& h = f.kvs[i];
      const auto& tokens = i < f.kv_tokens.size() ? f.kv_tokens[i] : std::vector<int32_t>{};
      const uint32_t n = std::min<uint32_t>(h.n_tokens, static_cast<uint32_t>(tokens.size())) / bt * bt;
      if (n == 0 || !pool().truncate(h, n)) {
        ignore_error("scheduler: releasing a finished sequence's KV", pool().release(h));
        continue;
      }
      release_all(st().cache.insert(std::span<const int32_t>(tokens.data(), n), std::move(h), ++st().tick));
    }
    admit();
  }

  void decode_failed(const sequence_failures& f) {
    for (uint64_t id : f.ids) st().offloaded.erase(id);
    for (size_t i = 0; i < f.ids.size(); ++i)
      if (st().table.failed(f.ids[i])) fail(f.ids[i], make_error(static_cast<errc>(f.codes[i]), f.messages[i]));
    admit();
  }

  void cancel(uint64_t id) {
    switch (st().table.cancel(id)) {
      case request_table::cancel_outcome::unknown:
        return;
      case request_table::cancel_outcome::removed:
        st().requests.erase(id);
        break;
      case request_table::cancel_outcome::release_later:
        break;  // its KV is released when the prefill replies
      case request_table::cancel_outcome::cancel_in_decode:
        // The worker holding it frees the KV (a sequence in transit: when its transfer replies).
        if (auto t = st().transit.find(id); t != st().transit.end()) t->second.cancelled = true;
        else if (!drop_parked(id)) send_cancel(id);
        st().requests.erase(id);
        break;
    }
    admit();
  }

  void prefill_worker_started(prefill_actor a, const std::string& reason) {
    st().prefill = std::move(a);
    if (!reason.empty()) ++st().worker_restarts;
    // Requests in a dead prefill worker fail through their request's error handler.
    admit();
  }

  void fallback_worker_started(prefill_actor a, const std::string& reason) {
    st().fallback = std::move(a);
    if (!reason.empty()) ++st().worker_restarts;
    admit();
  }

  void transfer_worker_started(transfer_actor a, const std::string& reason) {
    st().transfer = std::move(a);
    if (!reason.empty()) ++st().worker_restarts;
    admit();
  }

  void decode_worker_started(decode_actor a, const std::string& reason) {
    st().decode = std::move(a);
    if (!reason.empty()) ++st().worker_restarts;
    // Jobs that became ready while it was down.
    for (auto& job : st().parked) self_->send(st().decode, decode_atom::value, std::move(job));
    st().parked.clear();
    for (auto& box : st().parked_boxes) adopt(std::move(box));
    st().parked_boxes.clear();
    admit();
  }

  /// A decode worker produced these tokens (the client gets them after this).
  void progress(const step_tokens& t) {
    for (size_t i = 0; i < t.ids.size() && i < t.tokens.size(); ++i)
      if (auto it = st().requests.find(t.ids[i]); it != st().requests.end()) it->second.generated.push_back(t.tokens[i]);
    for (size_t i = 0; i < t.draft_ids.size() && i < t.draft_failed.size(); ++i)
      if (auto it = st().requests.find(t.draft_ids[i]); it != st().requests.end()) {
        ++it->second.proposals;
        it->second.draft_failures += t.draft_failed[i];
      }
    if (t.step_s > 0 && t.rows > 0) {
      st().predictor.observe(static_cast<double>(t.sum_context), t.rows, ctx_->m->config().n_layer, t.step_s);
      if (st().admission_held) admit();  // the batch may have room now
    }
  }

  /// A worker died; the supervisor restarts it after a backoff. What it held is not lost: the
  /// decoding requests go back to the head of the queue and are re-admitted from their history
  /// (prompt + generated tokens); prefill and transfer jobs fail over or requeue through their
  /// own error handlers.
  void worker_lost(worker_kind kind, const std::string& reason) {
    switch (kind) {
      case worker_kind::prefill: st().prefill = prefill_actor{}; break;
      case worker_kind::fallback: st().fallback = prefill_actor{}; break;
      case worker_kind::transfer: st().transfer = transfer_actor{}; break;
      case worker_kind::decode: {
        st().decode = decode_actor{};
        // Sequences on the offload device or moving there are not the dead worker's.
        auto held = [this](uint64_t i) { return !st().offloaded.count(i) && !st().transit.count(i) && !is_parked(i); };
        resume_lost(st().table.requeue_decoding(held, now_s()), pool(), "decode", reason);
        break;
      }
      case worker_kind::offload: {
        st().offload = decode_actor{};
        auto& off = st().offloaded;
        auto lost = st().table.requeue_decoding([&](uint64_t i) { return off.count(i) > 0; }, now_s());
        for (const auto& l : lost) off.erase(l.first);
        resume_lost(lost, offload_pool(), "offload decode", reason);
        break;
      }
    }
    admit();
  }

  bool is_parked(uint64_t id) const {
    for (const auto& j : self_->state.parked)
      if (j.id == id) return true;
    for (const auto& b : self_->state.parked_boxes)
      if (b.h && b.h->seq && b.h->seq->id() == id) return true;
    return false;
  }

  void resume_lost(const std::vector<std::pair<uint64_t, uint32_t>>& lost, kv_block_pool& from, const char* worker,
                   const std::string& reason) {
    if (lost.empty()) return;
    for (const auto& [id, epoch] : lost) from.release_epoch(epoch);
    log_warn("the " + std::string(worker) + " worker died (" + reason + "); " + std::to_string(lost.size()) +
             " request(s) it held are re-admitted from their token history");
  }

  /// The KV wire of prefill -> decode transfers: [supervisor] degraded_kv_transfer over a
  /// degraded link when one is set, else as configured (255).
  uint8_t transfer_wire() const {
    const bool degraded = self_->state.degradation >= static_cast<uint8_t>(degradation_state::link_degraded);
    return degraded && ctx_->limits.degraded_kv_transfer ? static_cast<uint8_t>(*ctx_->limits.degraded_kv_transfer)
                                                         : uint8_t{255};
  }

  /// The supervisor's degradation decision: new routes and transfers follow it; on a lost device
  /// the prompts still on the prefill device move to the decode device now.
  void degrade(uint8_t state, const std::string& why) {
    st().degradation = state;
    st().degradation_reason = why;
    if (state < static_cast<uint8_t>(degradation_state::cpu_fallback)) return;
    std::vector<uint64_t> ids;
    for (const auto& [id, sr] : st().staged)
      if (sr.on_prefill_device && !sr.failed_over) ids.push_back(id);
    for (uint64_t id : ids) {
      const request_record* r = st().table.find(id);
      if (r && !r->cancelled) fail_over(id, st().staged.at(id), "degraded (cpu-fallback): " + why);
    }
  }

  /// How many waiting requests may start now under [scheduler] admission_tpot_ms: the batch's
  /// predicted decode step with them stays within the target (an idle device takes one).
  uint32_t predicted_room() {
    const double target = ctx_->limits.admission_tpot_s;
    if (target <= 0 || !st().predictor.fitted()) return UINT32_MAX;
    double sum = 0, rows = 0;
    for (const auto& [id, h] : st().requests) {
      const request_record* r = st().table.find(id);
      if (!r || r->phase == request_phase::waiting) continue;
      sum += r->prompt_tokens + h.generated.size();
      ++rows;
    }
    if (rows == 0) return 1;
    return st().predictor.room(sum, rows, ctx_->m->config().n_layer, st().table.next_prompt_tokens(), target);
  }

  /// A request ended (served with its stage's levers): the breaker may move the rollout on.
  void record_outcome(const scheduler_state::held_request& h, bool error) {
    if (!st().rollout) return;
    rollout_outcome o;
    o.error = error;
    o.proposals = h.proposals;
    o.draft_failures = h.draft_failures;
    o.per_token_s = (now_s() - h.submitted_s) / static_cast<double>(std::max<size_t>(1, h.generated.size()));
    auto& b = *st().rollout;
    if (b.record(h.stage, o, now_s())) {
      const auto& d = b.decisions().back();
      const std::string line = "rollout: stage " + std::to_string(d.from) + " -> " + std::to_string(d.to) + " (" +
                               rollout_stage_name(d.to) + "): " + d.reason;
      if (d.to < d.from) log_warn(line);  // the breaker tripped
      else log_info(line);                // an advance
    }
  }

  /// Tells the decode worker holding a decoding request to drop it (it frees the KV).
  void send_cancel(uint64_t id) {
    const decode_actor& w = st().offloaded.count(id) ? st().offload : st().decode;
    if (w) self_->send(w, cancel_atom::value, id);
  }

  /// A parked decode job or sequence of a request that will not decode: its KV is freed here.
  bool drop_parked(uint64_t id) {
    auto& jobs = st().parked;
    for (auto it = jobs.begin(); it != jobs.end(); ++it)
      if (it->id == id) {
        ignore_error("scheduler: releasing a parked job's KV", pool().release(it->kv));
        jobs.erase(it);
        return true;
      }
    auto& boxes = st().parked_boxes;
    for (auto it = boxes.begin(); it != boxes.end(); ++it)
      if (it->h && it->h->seq && it->h->seq->id() == id) {
        ignore_error("scheduler: releasing a parked sequence's KV", pool().release(it->h->seq->kv()));
        boxes.erase(it);
        return true;
      }
    return false;
  }

  /// A running sequence goes (back) to the decode worker, or waits for its replacement.
  void adopt(sequence_box box) {
    if (st().decode) self_->send(st().decode, adopt_atom::value, std::move(box));
    else st().parked_boxes.push_back(std::move(box));
  }

  void tick() {
    const double now = now_s();
    std::vector<uint64_t> overdue;
    // The prefill device runs its jobs in admission order: the oldest pending one is running
    // (since the last reply, or its admission), the others wait.
    std::vector<std::pair<double, uint64_t>> pending;
    for (const auto& [id, sr] : st().staged)
      if (sr.on_prefill_device) pending.emplace_back(sr.admitted_s, id);
    std::sort(pending.begin(), pending.end());
    const double deadline = ctx_->limits.prefill_deadline_s;
    for (size_t i = 0; i < pending.size(); ++i) {
      const staged_request& sr = st().staged.at(pending[i].second);
      if (sr.failed_over) continue;
      const bool late = i == 0 ? running_prefill_overdue(std::max(sr.admitted_s, st().pd.last_reply_s), sr.prompt_tokens,
                                                         st().pd.prefill_rate, now, deadline)
                               : prefill_overdue(sr.admitted_s, now, deadline);
      if (late) overdue.push_back(pending[i].second);
    }
    for (uint64_t id : overdue) {
      const request_record* r = st().table.find(id);
      if (r && !r->cancelled)
        fail_over(id, st().staged.at(id),
                  "not prefilled within the " + std::to_string(ctx_->limits.prefill_deadline_s) + " s deadline");
    }
    for (const auto& [id, phase] : st().table.expire(now_s())) {
      self_->send(st().front_door, fail_atom::value,
                  request_failure{id, static_cast<uint8_t>(errc::timed_out),
                                  "request did not finish within " +
                                      std::to_string(static_cast<int>(ctx_->limits.request_timeout_s)) + " s"});
      if (phase == request_phase::decoding && !drop_parked(id)) send_cancel(id);
      if (phase != request_phase::prefilling) st().requests.erase(id);
    }
    admit();
    self_->delayed_send(self_, tick_interval, tick_atom::value);
  }

 private:
  /// A request refused before it entered the table.
  void reject(uint64_t id, const error& e) {
    ++st().rejected;
    self_->send(st().front_door, fail_atom::value, request_failure{id, static_cast<uint8_t>(e.code), e.message});
  }
  scheduler_state& st() { return self_->state; }
  kv_block_pool& pool() { return ctx_->device->kv_pool(); }             ///< the decode device's
  kv_block_pool& cache_pool() { return ctx_->prefill_device->kv_pool(); }  ///< the prefill device's
  kv_block_pool& offload_pool() { return ctx_->offload_device->kv_pool(); }  ///< with an offload device

  self_ptr self_;
  const engine_context* ctx_;
};

}  // namespace

scheduler_actor::behavior_type scheduler(self_ptr self, const engine_context* ctx, front_door_actor front_door) {
  scheduler_limits lim;
  lim.max_running = ctx->limits.max_batch;
  lim.max_queue = ctx->limits.max_queue;
  lim.total_kv_blocks = ctx->device->kv_pool().total_blocks();
  lim.request_timeout_s = ctx->limits.request_timeout_s;
  self->state.table = request_table(lim);
  self->state.cache = prefix_cache(ctx->prefill_device->kv_pool().layout().block_tokens, ctx->limits.prefix_cache_blocks);
  self->state.pool = &ctx->prefill_device->kv_pool();
  self->state.front_door = std::move(front_door);
  if (ctx->limits.rollout) self->state.rollout.emplace(*ctx->limits.rollout);
  self->delayed_send(self, tick_interval, tick_atom::value);
  return {
      [=](generate_atom, client_request& req) { scheduler_logic(self, ctx).submit(req); },
      [=](cancel_atom, uint64_t id) { scheduler_logic(self, ctx).cancel(id); },
      [=](done_atom, finished_ids& f) { scheduler_logic(self, ctx).finished(f); },
      [=](fail_atom, sequence_failures& f) { scheduler_logic(self, ctx).decode_failed(f); },
      [=](worker_atom, prefill_actor a, std::string& why) { scheduler_logic(self, ctx).prefill_worker_started(std::move(a), why); },
      [=](worker_atom, decode_actor a, std::string& why) { scheduler_logic(self, ctx).decode_worker_started(std::move(a), why); },
      [=](fallback_atom, prefill_actor a, std::string& why) { scheduler_logic(self, ctx).fallback_worker_started(std::move(a), why); },
      [=](worker_atom, transfer_actor a, std::string& why) { scheduler_logic(self, ctx).transfer_worker_started(std::move(a), why); },
      [=](offload_atom, sequence_box& b) { scheduler_logic(self, ctx).offload_sequence(b); },
      [=](offload_atom, decode_actor a, std::string& why) { scheduler_logic(self, ctx).offload_worker_started(std::move(a), why); },
      [=](progress_atom, step_tokens& t) { scheduler_logic(self, ctx).progress(t); },
      [=](lost_atom, uint8_t kind, std::string& why) {
        scheduler_logic(self, ctx).worker_lost(static_cast<worker_kind>(kind), why);
      },
      [=](degrade_atom, uint8_t state, std::string& why) { scheduler_logic(self, ctx).degrade(state, why); },
      [=](tick_atom) { scheduler_logic(self, ctx).tick(); },
      [=](stats_atom) { return scheduler_stats_of(self->state, *ctx); },
  };
}

}  // namespace fw::actors
