#include "actors/scheduler_actor.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <variant>

#include "actors/protocol/errc_error.hpp"

namespace fw::actors {
namespace {

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

constexpr auto tick_interval = std::chrono::milliseconds(200);

void apply(self_ptr self, scheduler_actions actions);

bool receiver_down(const caf::error& err) { return err == caf::sec::request_receiver_down; }

/// One action as one message; replies come back as the scheduler's next event.
struct action_sender {
  self_ptr self;

  const decode_actor& decode_worker(worker_kind w) const {
    return w == worker_kind::offload ? self->state.offload : self->state.decode;
  }

  void operator()(run_prefill& a) {
    auto& st = self->state;
    const prefill_actor& target = a.worker == worker_kind::prefill ? st.prefill : st.fallback;
    const uint64_t id = a.job.id;
    const worker_kind w = a.worker;
    const uint64_t gen = a.generation;
    auto s = self;
    self->request(target, caf::infinite, prefill_atom::value, std::move(a.job))
        .then([s, w](prefill_done& d) { apply(s, s->state.core->prefill_finished(w, std::move(d))); },
              [s, id, w, gen](caf::error& err) {
                apply(s, s->state.core->prefill_failed(id, w, gen, receiver_down(err), from_caf_error(err)));
              });
  }

  void operator()(run_transfer& a) {
    const uint64_t id = a.job.id;
    auto s = self;
    self->request(self->state.transfer, caf::infinite, transfer_atom::value, std::move(a.job))
        .then([s](transfer_done& t) { apply(s, s->state.core->transfer_finished(std::move(t))); },
              [s, id](caf::error& err) {
                apply(s, s->state.core->transfer_failed(id, receiver_down(err), from_caf_error(err)));
              });
  }

  void operator()(run_decode& a) { self->send(self->state.decode, decode_atom::value, std::move(a.job)); }

  void operator()(adopt_sequence& a) {
    sequence_box box;
    box.h = std::static_pointer_cast<sequence_box::holder>(a.seq);
    if (a.kv) box.h->seq->kv() = std::move(*a.kv);
    self->send(decode_worker(a.worker), adopt_atom::value, std::move(box));
  }

  void operator()(hand_over& a) {
    self->send(decode_worker(a.worker), offload_atom::value, a.id);
  }

  void operator()(cancel_decode& a) {
    self->send(decode_worker(a.worker), cancel_atom::value, a.id);
  }

  void operator()(fail_request& a) {
    self->send(self->state.front_door, fail_atom::value,
               request_failure{a.id, static_cast<uint8_t>(a.e.code), std::move(a.e.message)});
  }
};

void apply(self_ptr self, scheduler_actions actions) {
  for (auto& a : actions) std::visit(action_sender{self}, a);
}

}  // namespace

fw::scheduler::setup scheduler_setup_of(const engine_context& ctx) {
  fw::scheduler::setup s;
  s.decode_pool = &ctx.device()->kv_pool();
  s.prefill_pool = &ctx.prefill_device()->kv_pool();
  s.offload_pool = ctx.offload_device() ? &ctx.offload_device()->kv_pool() : nullptr;
  s.n_vocab = ctx.m->config().n_vocab;
  s.n_ctx = ctx.limits.n_ctx;
  s.n_layer = ctx.m->config().n_layer;
  s.max_batch = ctx.limits.max_batch;
  s.max_queue = ctx.limits.max_queue;
  s.request_timeout_s = ctx.limits.request_timeout_s;
  s.prefill_deadline_s = ctx.limits.prefill_deadline_s;
  s.request_retries = ctx.limits.request_retries;
  s.admission_tpot_s = ctx.limits.admission_tpot_s;
  s.prefix_cache_blocks = ctx.limits.prefix_cache_blocks;
  s.prefill_shortest_first = ctx.limits.prefill_shortest_first;
  s.prefill_slice = ctx.limits.prefill_chunk;
  s.prefill_max_wait_s = ctx.limits.prefill_max_wait_s;
  if (ctx.limits.degraded_kv_transfer) s.degraded_kv_wire = static_cast<uint8_t>(*ctx.limits.degraded_kv_transfer);
  s.rollout = ctx.limits.rollout;
  s.offload = ctx.limits.offload;
  return s;
}

scheduler_actor::behavior_type scheduler(self_ptr self, const engine_context* ctx, front_door_actor front_door) {
  self->state.core = std::make_unique<fw::scheduler>(scheduler_setup_of(*ctx));
  self->state.front_door = std::move(front_door);
  self->delayed_send(self, tick_interval, tick_atom::value);
  auto core = [self]() -> fw::scheduler& { return *self->state.core; };
  return {
      [=](generate_atom, client_request& req) { apply(self, core().submit(std::move(req))); },
      [=](cancel_atom, uint64_t id) { apply(self, core().cancel(id)); },
      [=](done_atom, finished_ids& f) { apply(self, core().finished(std::move(f))); },
      [=](fail_atom, sequence_failures& f) { apply(self, core().decode_failed(f)); },
      [=](worker_atom, prefill_actor a, std::string& why) {
        self->state.prefill = std::move(a);
        apply(self, core().worker_up(worker_kind::prefill, !why.empty()));
      },
      [=](fallback_atom, prefill_actor a, std::string& why) {
        self->state.fallback = std::move(a);
        apply(self, core().worker_up(worker_kind::fallback, !why.empty()));
      },
      [=](worker_atom, transfer_actor a, std::string& why) {
        self->state.transfer = std::move(a);
        apply(self, core().worker_up(worker_kind::transfer, !why.empty()));
      },
      [=](worker_atom, decode_actor a, std::string& why) {
        self->state.decode = std::move(a);
        apply(self, core().worker_up(worker_kind::decode, !why.empty()));
      },
      [=](offload_atom, decode_actor a, std::string& why) {
        self->state.offload = std::move(a);
        apply(self, core().worker_up(worker_kind::offload, !why.empty()));
      },
      [=](offload_atom, sequence_box& b) {
        if (!b.h || !b.h->seq) return;
        const sequence& seq = *b.h->seq;
        apply(self, core().offload_requested(seq.id(), seq.kv(), seq.remaining(), std::move(b.h)));
      },
      [=](progress_atom, step_tokens& t) { apply(self, core().progress(t)); },
      [=](lost_atom, uint8_t kind, std::string& why) {
        if (kind < worker_kinds) apply(self, core().worker_lost(static_cast<worker_kind>(kind), why));
      },
      [=](degrade_atom, uint8_t state, std::string& why) { apply(self, core().degrade(state, std::move(why))); },
      [=](tick_atom) {
        apply(self, core().tick());
        self->delayed_send(self, tick_interval, tick_atom::value);
      },
      [=](stats_atom) { return core().stats(); },
  };
}

}  // namespace fw::actors
