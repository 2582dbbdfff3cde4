#include "actors/scheduler_actor.hpp"

#include <caf/all.hpp>

#include <chrono>

#include "actors/protocol/errc_error.hpp"
#include "runtime/sched/admission.hpp"

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
    st().requests.emplace(req.id, std::move(req));
    admit();
  }

  void release_all(std::vector<kv_handle> handles) {
    for (auto& h : handles) ignore_error("scheduler: releasing a prefix-cache entry", pool().release(h));
  }

  void admit() {
    if (!st().prefill || !st().decode) return;
    auto ids = st().table.admit(pool().free_blocks());
    if (ids.empty() && st().table.counts().waiting > 0 && st().cache.stats().blocks > 0) {
      // Requests wait while cached prefixes hold blocks: running requests come first.
      release_all(st().cache.evict_all());
      ids = st().table.admit(pool().free_blocks());
    }
    for (uint64_t id : ids) {
      const request_record& r = *st().table.find(id);
      auto h = pool().allocate(r.prompt_tokens + r.budget);
      if (!h) {  // the table saw enough free blocks; only a foreign allocation could cause this
        st().table.allocation_failed(id);
        fail(id, make_error(errc::out_of_memory, "KV cache pool exhausted while admitting the request"));
        continue;
      }
      st().table.started(id, h->epoch);
      const auto& prompt = st().requests.at(id).prompt;
      // The last prompt token is the first decode step's input: never served from the cache.
      const std::span<const int32_t> history(prompt.data(), prompt.size() - 1);
      uint32_t reused = 0;
      if (ctx_->limits.prefix_cache_blocks > 0) {
        const auto m = st().cache.lookup(history, ++st().tick);
        if (m.tokens > 0 && pool().copy_tokens(pool(), *m.kv, *h, m.tokens)) reused = m.tokens;
      }
      prefill_job job{id, std::vector<int32_t>(history.begin() + reused, history.end()), std::move(*h)};
      auto* self = self_;
      const auto* ctx = ctx_;
      prefill_actor target = st().prefill;
      self_->request(target, caf::infinite, prefill_atom::value, std::move(job))
          .then([self, ctx](prefill_done& d) { scheduler_logic(self, ctx).prefilled(d); },
                [self, ctx, id, target](caf::error& err) { scheduler_logic(self, ctx).prefill_failed(id, target, err); });
    }
  }

  /// Copies the prompt's whole blocks into a cache entry (the request keeps its own).
  void remember_prefix(const std::vector<int32_t>& prompt, const kv_handle& kv) {
    const uint32_t bt = st().cache.block_tokens();
    const uint32_t n = kv.n_tokens / bt * bt;
    if (ctx_->limits.prefix_cache_blocks == 0 || n == 0) return;
    const std::span<const int32_t> history(prompt.data(), std::min<size_t>(prompt.size(), n));
    if (st().cache.find(history).tokens == n) return;  // cached already
    kv_handle copy;
    if (!pool().copy_tokens(pool(), kv, copy, n)) return;  // no free blocks: nothing cached
    release_all(st().cache.insert(history, std::move(copy), ++st().tick));
  }

  void prefilled(prefill_done& d) {
    if (st().table.prefilled(d.id) == request_table::after_prefill::release) {
      ignore_error("scheduler: releasing a cancelled request's KV", pool().release(d.kv));
      st().requests.erase(d.id);
      admit();
      return;
    }
    auto& req = st().requests.at(d.id);
    const request_record& r = *st().table.find(d.id);
    remember_prefix(req.prompt, d.kv);
    decode_job job{d.id, req.prompt, req.params, r.budget, std::move(d.kv), d.attention_entropy, d.done_s};
    self_->send(st().decode, decode_atom::value, std::move(job));
  }

  void prefill_failed(uint64_t id, const prefill_actor& target, const caf::error& err) {
    // A job that reached a prefill worker which had already died for another request: this one
    // is innocent and waits for the replacement the supervisor is starting.
    const bool receiver_died = err == caf::sec::request_receiver_down;
    if (receiver_died && st().prefill == target) st().prefill = prefill_actor{};
    const auto f = st().table.prefill_failed(id, receiver_died, now_s());
    if (!f.known) return;
    if (f.epoch) pool().release_epoch(f.epoch);  // the handle died with the job
    if (!f.requeued) {
      if (f.was_cancelled) {
        st().requests.erase(id);
      } else {
        error e = from_caf_error(err);
        if (e.code == errc::worker_failed)
          e.message = "the prefill worker failed while running this request (" + e.message +
                      "); it is restarted, resubmit the request";
        fail(id, e);
      }
    }
    admit();
  }

  void finished(finished_ids& f) {
    st().table.finished(f.ids);
    for (uint64_t id : f.ids) st().requests.erase(id);
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
        self_->send(st().decode, cancel_atom::value, id);  // the decode worker frees the KV
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

  void decode_worker_started(decode_actor a, const std::string& reason) {
    st().decode = std::move(a);
    if (!reason.empty()) {
      ++st().worker_restarts;
      // The dead decode worker held these sequences: free their KV and fail them.
      for (const auto& [id, epoch] : st().table.decode_worker_lost()) {
        pool().release_epoch(epoch);
        fail(id, make_error(errc::worker_failed,
                            "the decode worker crashed (" + reason + "); it was restarted, resubmit the request"));
      }
    }
    admit();
  }

  void tick() {
    for (const auto& [id, phase] : st().table.expire(now_s())) {
      self_->send(st().front_door, fail_atom::value,
                  request_failure{id, static_cast<uint8_t>(errc::timed_out),
                                  "request did not finish within " +
                                      std::to_string(static_cast<int>(ctx_->limits.request_timeout_s)) + " s"});
      if (phase == request_phase::decoding) self_->send(st().decode, cancel_atom::value, id);
      if (phase != request_phase::prefilling) st().requests.erase(id);
    }
    admit();
    self_->delayed_send(self_, tick_interval, tick_atom::value);
  }

  scheduler_stats stats() {
    const auto c = st().table.counts();
    scheduler_stats s;
    s.waiting = c.waiting;
    s.prefilling = c.prefilling;
    s.decoding = c.decoding;
    s.completed = c.completed;
    s.failed = c.failed + st().rejected;
    s.worker_restarts = st().worker_restarts;
    s.requeued = c.requeued;
    s.peak_waiting = c.peak_waiting;
    const auto& pc = st().cache.stats();
    // Cached prefixes are reclaimable (admission evicts them), so they count as free here, as
    // vLLM counts its cached blocks; prefix_cache_blocks says how many there are.
    s.kv_used_blocks = pool().used_blocks() - std::min<uint64_t>(pool().used_blocks(), pc.blocks);
    s.kv_total_blocks = pool().total_blocks();
    s.prefix_cache_queries = pc.queries;
    s.prefix_cache_hits = pc.hits;
    s.prefix_cache_hit_tokens = pc.hit_tokens;
    s.prefix_cache_query_tokens = pc.query_tokens;
    s.prefix_cache_blocks = pc.blocks;
    return s;
  }

 private:
  /// A request refused before it entered the table.
  void reject(uint64_t id, const error& e) {
    ++st().rejected;
    self_->send(st().front_door, fail_atom::value, request_failure{id, static_cast<uint8_t>(e.code), e.message});
  }
  scheduler_state& st() { return self_->state; }
  kv_block_pool& pool() { return ctx_->device->kv_pool(); }

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
  self->state.cache = prefix_cache(ctx->device->kv_pool().layout().block_tokens, ctx->limits.prefix_cache_blocks);
  self->state.pool = &ctx->device->kv_pool();
  self->state.front_door = std::move(front_door);
  self->delayed_send(self, tick_interval, tick_atom::value);
  return {
      [=](generate_atom, client_request& req) { scheduler_logic(self, ctx).submit(req); },
      [=](cancel_atom, uint64_t id) { scheduler_logic(self, ctx).cancel(id); },
      [=](done_atom, finished_ids& f) { scheduler_logic(self, ctx).finished(f); },
      [=](fail_atom, sequence_failures& f) { scheduler_logic(self, ctx).decode_failed(f); },
      [=](worker_atom, prefill_actor a, std::string& why) { scheduler_logic(self, ctx).prefill_worker_started(std::move(a), why); },
      [=](worker_atom, decode_actor a, std::string& why) { scheduler_logic(self, ctx).decode_worker_started(std::move(a), why); },
      [=](tick_atom) { scheduler_logic(self, ctx).tick(); },
      [=](stats_atom) { return scheduler_logic(self, ctx).stats(); },
  };
}

}  // namespace fw::actors
