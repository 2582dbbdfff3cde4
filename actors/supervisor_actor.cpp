#include "actors/supervisor_actor.hpp"

#include <caf/all.hpp>

#include <chrono>

#include "actors/decode_actor.hpp"
#include "actors/prefill_actor.hpp"
#include "actors/transfer_actor.hpp"
#include "runtime/base/log.hpp"

namespace fw::actors {
namespace {

using self_ptr = supervisor_actor::stateful_pointer<supervisor_state>;

constexpr const char* kind_names[supervisor_state::kinds] = {"prefill", "fallback", "transfer", "decode", "offload"};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

size_t index(worker_kind k) { return static_cast<size_t>(k); }

/// Spawns the worker of kind k and hands it to the scheduler; why is empty at start.
void start(self_ptr self, const engine_context* ctx, worker_kind k, const std::string& why) {
  auto& st = self->state;
  auto& sys = self->system();
  st.down[index(k)] = false;
  switch (k) {
    case worker_kind::prefill:
      st.prefill = sys.spawn<caf::detached>(prefill_worker, ctx, ctx->prefill_device, false);
      self->monitor(st.prefill);
      self->send(st.scheduler, worker_atom::value, st.prefill, why);
      break;
    case worker_kind::fallback:
      st.fallback = sys.spawn<caf::detached>(prefill_worker, ctx, ctx->device, true);
      self->monitor(st.fallback);
      self->send(st.scheduler, fallback_atom::value, st.fallback, why);
      break;
    case worker_kind::transfer:
      st.transfer = sys.spawn<caf::detached>(transfer_worker, ctx);
      self->monitor(st.transfer);
      self->send(st.scheduler, worker_atom::value, st.transfer, why);
      break;
    case worker_kind::decode:
      st.decode = sys.spawn<caf::detached>(decode_worker, ctx, st.front_door, st.scheduler, ctx->device, false);
      self->monitor(st.decode);
      self->send(st.scheduler, worker_atom::value, st.decode, why);
      break;
    case worker_kind::offload:
      st.offload = sys.spawn<caf::detached>(decode_worker, ctx, st.front_door, st.scheduler, ctx->offload_device, true);
      self->monitor(st.offload);
      self->send(st.scheduler, offload_atom::value, st.offload, why);
      break;
  }
}

/// Which worker an exit came from (forgetting its handle); false: none of ours.
bool which(supervisor_state& st, const caf::actor_addr& src, worker_kind& out) {
  auto is = [&](auto& handle, worker_kind k) {
    if (!handle || handle.address() != src) return false;
    handle = std::decay_t<decltype(handle)>{};
    out = k;
    return true;
  };
  return is(st.decode, worker_kind::decode) || is(st.prefill, worker_kind::prefill) ||
         is(st.fallback, worker_kind::fallback) || is(st.offload, worker_kind::offload) ||
         is(st.transfer, worker_kind::transfer);
}

}  // namespace

supervisor_actor::behavior_type supervisor(self_ptr self, const engine_context* ctx, front_door_actor front_door,
                                           scheduler_actor scheduler) {
  self->state.front_door = std::move(front_door);
  self->state.scheduler = std::move(scheduler);
  for (auto& p : self->state.policies) p = restart_policy(ctx->limits.restart);
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.stopping) return;
    worker_kind k;
    if (!which(st, dm.source, k)) return;
    std::string reason = self->system().render(dm.reason);
    if (reason.empty() || reason == "none") reason = "exited";
    const size_t i = index(k);
    st.last_reason[i] = reason;
    // The scheduler re-admits what the worker held now, not after the backoff.
    self->send(st.scheduler, lost_atom::value, static_cast<uint8_t>(k), reason);
    const restart_decision d = st.policies[i].crashed(now_s());
    if (d.escalate) {
      st.down[i] = true;
      log_warn(std::string("supervisor: the ") + kind_names[i] + " worker died " + std::to_string(d.recent) +
               " times within " + std::to_string(static_cast<int>(st.policies[i].limits().window_s)) +
               " s; its device is marked down for " + std::to_string(d.delay_s) + " s (last: " + reason + ")");
    }
    const auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(d.delay_s));
    if (delay.count() <= 0) self->send(self, worker_atom::value, static_cast<uint8_t>(k));
    else self->delayed_send(self, delay, worker_atom::value, static_cast<uint8_t>(k));
  });
  return {
      [=](init_atom) {
        start(self, ctx, worker_kind::prefill, "");
        if (ctx->physical()) start(self, ctx, worker_kind::fallback, "");
        if (ctx->transfers()) start(self, ctx, worker_kind::transfer, "");
        if (ctx->offload_device) start(self, ctx, worker_kind::offload, "");
        start(self, ctx, worker_kind::decode, "");
        return ok_atom::value;
      },
      [=](worker_atom, uint8_t kind) {
        auto& st = self->state;
        if (st.stopping || kind >= supervisor_state::kinds) return;
        ++st.restarts;
        start(self, ctx, static_cast<worker_kind>(kind), st.last_reason[kind]);
      },
      [=](stats_atom) { return self->state.restarts; },
      [=](health_atom) {
        auto& st = self->state;
        worker_health h;
        const bool present[supervisor_state::kinds] = {true, ctx->physical(), ctx->transfers(), true,
                                                       ctx->offload_device != nullptr};
        const bool running[supervisor_state::kinds] = {bool(st.prefill), bool(st.fallback), bool(st.transfer),
                                                       bool(st.decode), bool(st.offload)};
        for (size_t i = 0; i < supervisor_state::kinds; ++i) {
          if (!present[i]) continue;
          h.names.emplace_back(kind_names[i]);
          h.crashes.push_back(st.policies[i].crashes());
          h.escalations.push_back(st.policies[i].escalations());
          h.states.emplace_back(running[i] ? "running" : st.down[i] ? "down" : "restarting");
          h.last_reason.push_back(st.last_reason[i]);
        }
        return h;
      },
      [=](shutdown_atom) {
        auto& st = self->state;
        st.stopping = true;
        if (st.prefill) self->send_exit(st.prefill, caf::exit_reason::user_shutdown);
        if (st.decode) self->send_exit(st.decode, caf::exit_reason::user_shutdown);
        if (st.fallback) self->send_exit(st.fallback, caf::exit_reason::user_shutdown);
        if (st.transfer) self->send_exit(st.transfer, caf::exit_reason::user_shutdown);
        if (st.offload) self->send_exit(st.offload, caf::exit_reason::user_shutdown);
        self->quit();
      },
  };
}

}  // namespace fw::actors
