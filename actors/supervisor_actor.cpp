#include "actors/supervisor_actor.hpp"

#include <caf/all.hpp>

#include "actors/decode_actor.hpp"
#include "actors/prefill_actor.hpp"
#include "actors/transfer_actor.hpp"

namespace fw::actors {
namespace {

using self_ptr = supervisor_actor::stateful_pointer<supervisor_state>;

void start_prefill(self_ptr self, const engine_context* ctx, const std::string& why) {
  auto& st = self->state;
  st.prefill = self->system().spawn<caf::detached>(prefill_worker, ctx, ctx->prefill_device, false);
  self->monitor(st.prefill);
  self->send(st.scheduler, worker_atom::value, st.prefill, why);
}

void start_fallback(self_ptr self, const engine_context* ctx, const std::string& why) {
  auto& st = self->state;
  st.fallback = self->system().spawn<caf::detached>(prefill_worker, ctx, ctx->device, true);
  self->monitor(st.fallback);
  self->send(st.scheduler, fallback_atom::value, st.fallback, why);
}

void start_transfer(self_ptr self, const engine_context* ctx, const std::string& why) {
  auto& st = self->state;
  st.transfer = self->system().spawn<caf::detached>(transfer_worker, ctx);
  self->monitor(st.transfer);
  self->send(st.scheduler, worker_atom::value, st.transfer, why);
}

void start_decode(self_ptr self, const engine_context* ctx, const std::string& why) {
  auto& st = self->state;
  st.decode = self->system().spawn<caf::detached>(decode_worker, ctx, st.front_door, st.scheduler, ctx->device, false);
  self->monitor(st.decode);
  self->send(st.scheduler, worker_atom::value, st.decode, why);
}

void start_offload(self_ptr self, const engine_context* ctx, const std::string& why) {
  auto& st = self->state;
  st.offload =
      self->system().spawn<caf::detached>(decode_worker, ctx, st.front_door, st.scheduler, ctx->offload_device, true);
  self->monitor(st.offload);
  self->send(st.scheduler, offload_atom::value, st.offload, why);
}

}  // namespace

supervisor_actor::behavior_type supervisor(self_ptr self, const engine_context* ctx, front_door_actor front_door,
                                           scheduler_actor scheduler) {
  self->state.front_door = std::move(front_door);
  self->state.scheduler = std::move(scheduler);
  self->set_down_handler([self, ctx](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.stopping) return;
    std::string reason = self->system().render(dm.reason);
    if (reason.empty() || reason == "none") reason = "exited";
    if (st.decode && dm.source == st.decode.address()) {
      ++st.restarts;
      start_decode(self, ctx, reason);
    } else if (st.prefill && dm.source == st.prefill.address()) {
      ++st.restarts;
      start_prefill(self, ctx, reason);
    } else if (st.fallback && dm.source == st.fallback.address()) {
      ++st.restarts;
      start_fallback(self, ctx, reason);
    } else if (st.offload && dm.source == st.offload.address()) {
      ++st.restarts;
      start_offload(self, ctx, reason);
    } else if (st.transfer && dm.source == st.transfer.address()) {
      ++st.restarts;
      start_transfer(self, ctx, reason);
    }
  });
  return {
      [=](init_atom) {
        start_prefill(self, ctx, "");
        if (ctx->physical()) start_fallback(self, ctx, "");
        if (ctx->transfers()) start_transfer(self, ctx, "");
        if (ctx->offload_device) start_offload(self, ctx, "");
        start_decode(self, ctx, "");
        return ok_atom::value;
      },
      [=](stats_atom) { return self->state.restarts; },
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
