#include "actors/decode_actor.hpp"

#include <caf/all.hpp>

#include <stdexcept>

#include "actors/decode_protocol.hpp"

namespace fw::actors {
namespace {

// Mirrors the decoder's cumulative speculation counters into the engine's registry (vLLM's
// spec_decode_* names). advance_to keeps them monotonic across decode-actor restarts.
void publish_spec_metrics(const engine_context& ctx, const spec_stats& s) {
  auto& reg = *ctx.metrics;
  reg.counter(metric_names::spec_decode_num_drafts, metric_names::spec_decode_num_drafts_help, ctx.labels)
      .advance_to(static_cast<double>(s.steps));
  reg.counter(metric_names::spec_decode_num_draft_tokens, metric_names::spec_decode_num_draft_tokens_help, ctx.labels)
      .advance_to(static_cast<double>(s.draft_tokens));
  reg.counter(metric_names::spec_decode_num_accepted_tokens, metric_names::spec_decode_num_accepted_tokens_help, ctx.labels)
      .advance_to(static_cast<double>(s.accepted_tokens));
  for (size_t i = 0; i < s.accepted_at.size(); ++i) {
    metric_labels l = ctx.labels;
    l.emplace_back("position", std::to_string(i));
    reg.counter(metric_names::spec_decode_num_accepted_tokens_per_pos, metric_names::spec_decode_num_accepted_tokens_per_pos_help, l)
        .advance_to(static_cast<double>(s.accepted_at[i]));
  }
}

}  // namespace

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
        // Counters and the scheduler first, so that what a client reads after its final event
        // already includes this step.
        if (ctx->limits.draft && ctx->metrics) publish_spec_metrics(*ctx, st.decoder->speculation_stats());
        if (!done.ids.empty()) self->send(scheduler, done_atom::value, std::move(done));
        if (!events->empty()) self->send(front_door, step_atom::value, step_batch{std::move(*events)});
        kick();
      },
  };
}

}  // namespace fw::actors
