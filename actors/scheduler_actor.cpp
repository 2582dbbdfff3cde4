#include "actors/scheduler_actor.hpp"

#include <caf/all.hpp>

#include <chrono>

#include "actors/decode_protocol.hpp"
#include "actors/prefill_protocol.hpp"

namespace fw::actors {
namespace {

using self_ptr = caf::stateful_actor<scheduler_state>*;

constexpr auto tick_interval = std::chrono::milliseconds(200);

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class scheduler_logic {
 public:
  scheduler_logic(self_ptr self, const engine_context* ctx) : self_(self), ctx_(ctx) {}

  void fail(uint64_t id, errc code, const std::string& message) {
    self_->send(st().front_door, fail_atom::value, request_failure{id, to_string(code), message});
    ++st().stats.failed;
  }

  void submit(client_request& req) {
    const auto n = static_cast<uint32_t>(req.prompt.size());
    const uint32_t n_ctx = ctx_->limits.n_ctx;
    if (auto ok = req.params.validate(); !ok) return fail(req.id, ok.err().code, ok.err().message);
    if (n == 0) return fail(req.id, errc::invalid_argument, "the prompt is empty");
    for (int32_t t : req.prompt)
      if (t < 0 || static_cast<uint32_t>(t) >= ctx_->m->config().n_vocab)
        return fail(req.id, errc::invalid_argument, "prompt token " + std::to_string(t) + " is outside the vocabulary");
    if (n >= n_ctx)
      return fail(req.id, errc::context_overflow, "prompt of " + std::to_string(n) +
                  " tokens does not fit the context window of " + std::to_string(n_ctx) + " tokens");
    uint32_t budget = n_ctx - n;
    if (req.params.max_tokens >= 0) {
      if (static_cast<uint32_t>(req.params.max_tokens) > budget)
        return fail(req.id, errc::context_overflow, "prompt (" + std::to_string(n) + " tokens) + max_tokens (" +
                    std::to_string(req.params.max_tokens) + ") exceeds the context window of " +
                    std::to_string(n_ctx) + " tokens");
      budget = static_cast<uint32_t>(req.params.max_tokens);
    }
    if (budget == 0) return fail(req.id, errc::invalid_argument, "max_tokens is 0: nothing to generate");
    if (st().requests.count(req.id)) return fail(req.id, errc::invalid_argument, "duplicate request id");
    const uint32_t blocks = pool().layout().blocks_for_tokens(n + budget);
    if (auto ok = st().policy.enqueue(queued_request{req.id, blocks, now_s()}); !ok)
      return fail(req.id, ok.err().code, ok.err().message);
    scheduled_request r;
    r.budget = budget;
    r.req = std::move(req);
    const uint64_t id = r.req.id;
    st().requests.emplace(id, std::move(r));
    admit();
  }

  void admit() {
    if (!st().prefill || !st().decode) return;
    for (uint64_t id : st().policy.admit(pool().free_blocks())) {
      auto& r = st().requests.at(id);
      const auto n = static_cast<uint32_t>(r.req.prompt.size());
      auto h = pool().allocate(n + r.budget);
      if (!h) {  // the policy saw enough free blocks; only a foreign allocation could cause this
        st().policy.remove(id);
        st().requests.erase(id);
        fail(id, errc::out_of_memory, "KV cache pool exhausted while admitting the request");
        continue;
      }
      r.epoch = h->epoch;
      r.phase = request_phase::prefilling;
      prefill_job job{id, std::vector<int32_t>(r.req.prompt.begin(), r.req.prompt.end() - 1), std::move(*h)};
      auto* self = self_;
      const auto* ctx = ctx_;
      caf::actor target = st().prefill;
      self_->request(target, caf::infinite, prefill_atom::value, std::move(job))
          .then([self, ctx](prefill_done& d) { scheduler_logic(self, ctx).prefilled(d); },
                [self, ctx, id, target](caf::error& err) { scheduler_logic(self, ctx).prefill_failed(id, target, err); });
    }
  }

  void prefilled(prefill_done& d) {
    auto it = st().requests.find(d.id);
    if (it == st().requests.end() || it->second.cancelled) {
      (void)pool().release(d.kv);
      if (it != st().requests.end()) st().requests.erase(it);
      admit();
      return;
    }
    auto& r = it->second;
    r.phase = request_phase::decoding;
    decode_job job{d.id, r.req.prompt, r.req.params, r.budget, std::move(d.kv), d.attention_entropy};
    self_->send(st().decode, decode_atom::value, std::move(job));
  }

  void prefill_failed(uint64_t id, const caf::actor& target, const caf::error& err) {
    auto it = st().requests.find(id);
    if (it == st().requests.end()) return;
    pool().release_epoch(it->second.epoch);  // the handle died with the job
    const bool cancelled = it->second.cancelled;
    st().policy.remove(id);
    if (!cancelled && err == caf::sec::request_receiver_down) {
      // The job reached a prefill actor that had already died for another request: this one is
      // innocent, so it waits for the replacement the supervisor is starting.
      if (st().prefill == target) st().prefill = caf::actor{};
      it->second.phase = request_phase::waiting;
      it->second.epoch = 0;
      const uint32_t blocks = pool().layout().blocks_for_tokens(
          static_cast<uint32_t>(it->second.req.prompt.size()) + it->second.budget);
      if (st().policy.enqueue(queued_request{id, blocks, now_s()})) return;
    }
    st().requests.erase(it);
    if (!cancelled)
      fail(id, errc::worker_failed, "the prefill worker failed while running this request (" +
           self_->system().render(err) + "); it is restarted, resubmit the request");
    admit();
  }

  void finished(const finished_ids& f) {
    for (uint64_t id : f.ids) {
      st().policy.remove(id);
      if (st().requests.erase(id)) ++st().stats.completed;
    }
    admit();
  }

  void cancel(uint64_t id) {
    auto it = st().requests.find(id);
    if (it == st().requests.end()) return;
    st().policy.remove(id);
    switch (it->second.phase) {
      case request_phase::waiting:
        st().requests.erase(it);
        break;
      case request_phase::prefilling:
        it->second.cancelled = true;  // its KV is released when the prefill replies
        break;
      case request_phase::decoding:
        self_->send(st().decode, cancel_atom::value, id);  // the decode actor frees the KV
        st().requests.erase(it);
        break;
    }
    admit();
  }

  void worker_replaced(worker_restart& w) {
    const bool is_decode = w.kind == static_cast<uint8_t>(worker_kind::decode);
    (is_decode ? st().decode : st().prefill) = w.replacement;
    if (!w.reason.empty()) {
      ++st().stats.worker_restarts;
      if (is_decode) {
        // The dead decode actor held these sequences; free their KV and fail them.
        std::vector<uint64_t> lost;
        for (auto& [id, r] : st().requests)
          if (r.phase == request_phase::decoding) lost.push_back(id);
        for (uint64_t id : lost) {
          pool().release_epoch(st().requests.at(id).epoch);
          st().policy.remove(id);
          st().requests.erase(id);
          fail(id, errc::worker_failed, "the decode worker crashed (" + w.reason + "); it was restarted, resubmit the request");
        }
      }
      // Requests in a dead prefill actor fail through their request's error handler.
    }
    admit();
  }

  void tick() {
    for (uint64_t id : st().policy.expire(now_s())) {
      auto it = st().requests.find(id);
      if (it == st().requests.end()) continue;
      st().policy.remove(id);
      fail(id, errc::timed_out, "request did not finish within " +
           std::to_string(static_cast<int>(ctx_->limits.request_timeout_s)) + " s");
      if (it->second.phase == request_phase::prefilling) {
        it->second.cancelled = true;
      } else {
        if (it->second.phase == request_phase::decoding) self_->send(st().decode, cancel_atom::value, id);
        st().requests.erase(it);
      }
    }
    admit();
    self_->delayed_send(self_, tick_interval, tick_atom::value);
  }

  scheduler_stats stats() {
    scheduler_stats s = st().stats;
    s.waiting = st().policy.waiting();
    s.prefilling = s.decoding = 0;
    for (auto& [id, r] : st().requests) {
      s.prefilling += r.phase == request_phase::prefilling;
      s.decoding += r.phase == request_phase::decoding;
    }
    s.kv_used_blocks = pool().used_blocks();
    s.kv_total_blocks = pool().total_blocks();
    return s;
  }

 private:
  scheduler_state& st() { return self_->state; }
  kv_block_pool& pool() { return ctx_->device->kv_pool(); }

  self_ptr self_;
  const engine_context* ctx_;
};

}  // namespace

caf::behavior scheduler_actor(self_ptr self, const engine_context* ctx, caf::actor front_door) {
  scheduler_limits lim;
  lim.max_running = ctx->limits.max_batch;
  lim.max_queue = ctx->limits.max_queue;
  lim.total_kv_blocks = ctx->device->kv_pool().total_blocks();
  lim.request_timeout_s = ctx->limits.request_timeout_s;
  self->state.policy = scheduler_policy(lim);
  self->state.front_door = std::move(front_door);
  self->delayed_send(self, tick_interval, tick_atom::value);
  return {
      [=](generate_atom, client_request& req) { scheduler_logic(self, ctx).submit(req); },
      [=](cancel_atom, uint64_t id) { scheduler_logic(self, ctx).cancel(id); },
      [=](done_atom, finished_ids& f) { scheduler_logic(self, ctx).finished(f); },
      [=](worker_atom, worker_restart& w) { scheduler_logic(self, ctx).worker_replaced(w); },
      [=](tick_atom) { scheduler_logic(self, ctx).tick(); },
      [=](stats_atom) { return scheduler_logic(self, ctx).stats(); },
  };
}

}  // namespace fw::actors
