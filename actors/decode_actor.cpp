#include "actors/decode_actor.hpp"

#include <caf/all.hpp>

#include <stdexcept>

#include "actors/decode_protocol.hpp"

namespace fw::actors {

caf::behavior decode_actor(caf::stateful_actor<decode_state>* self, const engine_context* ctx,
                           caf::actor front_door, caf::actor scheduler) {
  self->state.decoder = std::make_unique<batch_decoder>(*ctx->m, *ctx->device, ctx->limits.max_batch);
  self->state.decoder->set_speculation(ctx->limits.draft, ctx->limits.policy);
  auto kick = [self] {
    auto& st = self->state;
    if (!st.stepping && st.decoder->active() > 0) {
      st.stepping = true;
      self->send(self, step_atom::value);
    }
  };
  return {
      [=](decode_atom, decode_job& job) {
        auto seq = std::make_unique<sequence>(job.id, std::move(job.history), job.params,
                                              static_cast<int32_t>(ctx->m->config().n_vocab), job.budget);
        seq->kv() = std::move(job.kv);
        std::optional<float> entropy;
        if (job.attention_entropy >= 0) entropy = job.attention_entropy;
        self->state.decoder->add(std::move(seq), entropy);
        kick();
      },
      [=](cancel_atom, uint64_t id) {
        if (self->state.decoder->remove(id)) self->send(scheduler, done_atom::value, finished_ids{{id}});
      },
      [=](fault_atom) { self->state.fault_armed = true; },
      [=](step_atom) {
        auto& st = self->state;
        st.stepping = false;
        if (st.fault_armed) {
          st.fault_armed = false;
          throw std::runtime_error("injected fault in the decode step");
        }
        auto events = st.decoder->step();
        if (!events) throw std::runtime_error("decode step failed: " + events.err().what());
        finished_ids done;
        for (const auto& e : *events)
          if (e.finished) done.ids.push_back(e.id);
        if (!events->empty()) self->send(front_door, step_atom::value, step_batch{std::move(*events)});
        if (!done.ids.empty()) self->send(scheduler, done_atom::value, std::move(done));
        kick();
      },
  };
}

}  // namespace fw::actors
