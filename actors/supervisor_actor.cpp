#include "actors/supervisor_actor.hpp"

#include <caf/all.hpp>

#include "actors/decode_actor.hpp"
#include "actors/decode_protocol.hpp"
#include "actors/front_door_actor.hpp"
#include "actors/front_door_protocol.hpp"
#include "actors/prefill_actor.hpp"
#include "actors/scheduler_protocol.hpp"

namespace fw::actors {
namespace {

using self_ptr = caf::stateful_actor<supervisor_state>*;

caf::actor spawn_worker(self_ptr self, const engine_context* ctx, worker_kind kind) {
  auto& st = self->state;
  caf::actor a = kind == worker_kind::decode
                     ? self->system().spawn<caf::detached>(decode_actor, ctx, st.front_door, st.scheduler)
                     : self->system().spawn<caf::detached>(prefill_actor, ctx);
  self->monitor(a);
  (kind == worker_kind::decode ? st.decode : st.prefill) = a;
  return a;
}

}  // namespace

caf::behavior supervisor_actor(self_ptr self, const engine_context* ctx, caf::actor front_door,
                               caf::actor scheduler) {
  self->state.front_door = std::move(front_door);
  self->state.scheduler = std::move(scheduler);
  self->set_down_handler([self, ctx](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.stopping) return;
    worker_kind kind;
    if (st.decode && dm.source == st.decode.address()) kind = worker_kind::decode;
    else if (st.prefill && dm.source == st.prefill.address()) kind = worker_kind::prefill;
    else return;
    ++st.restarts;
    caf::actor a = spawn_worker(self, ctx, kind);
    std::string reason = self->system().render(dm.reason);
    if (reason.empty() || reason == "none") reason = "exited";
    self->send(st.scheduler, worker_atom::value, worker_restart{static_cast<uint8_t>(kind), a, reason});
  });
  return {
      [=](init_atom) {
        for (auto kind : {worker_kind::prefill, worker_kind::decode}) {
          caf::actor a = spawn_worker(self, ctx, kind);
          self->send(self->state.scheduler, worker_atom::value, worker_restart{static_cast<uint8_t>(kind), a, ""});
        }
        return caf::atom("ok");
      },
      [=](fault_atom, uint8_t kind) {
        auto& st = self->state;
        self->send(kind == static_cast<uint8_t>(worker_kind::decode) ? st.decode : st.prefill, fault_atom::value);
      },
      [=](stats_atom) { return self->state.restarts; },
      [=](shutdown_atom) {
        auto& st = self->state;
        st.stopping = true;
        for (auto* a : {&st.prefill, &st.decode})
          if (*a) self->send_exit(*a, caf::exit_reason::user_shutdown);
        self->quit();
      },
  };
}

}  // namespace fw::actors
