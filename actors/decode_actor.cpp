#include "actors/decode_actor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace fw::actors {
namespace {

// Mirrors the decoder's cumulative speculation counters into the engine's registry (vLLM's
// spec_decode_* names). advance_to keeps them monotonic across decode-worker restarts.
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

decode_actor::behavior_type decode_worker(decode_actor::stateful_pointer<decode_state> self, const engine_context* ctx,
                                          front_door_actor front_door, scheduler_actor scheduler) {
  self->state.decoder = std::make_unique<batch_decoder>(*ctx->m, *ctx->device, ctx->limits.max_batch);
  self->state.decoder->set_speculation(ctx->limits.draft, ctx->limits.policy);
  self->state.decoder->keep_finished_kv(ctx->limits.prefix_cache_blocks > 0 && !ctx->physical());
  if (ctx->faults && ctx->faults->fail_kv_reserve) self->state.decoder->set_kv_fault(ctx->faults->fail_kv_reserve);
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
        if (job.prefilled_s > 0) self->state.joined_prefilled_s.push_back(job.prefilled_s);
        kick();
      },
      [=](cancel_atom, uint64_t id) {
        if (self->state.decoder->remove(id)) self->send(scheduler, done_atom::value, finished_ids{{id}, {}, {}});
      },
      [=](step_atom) {
        auto& st = self->state;
        st.stepping = false;
        if (ctx->faults && ctx->faults->before_decode_step && ctx->faults->before_decode_step())
          throw std::runtime_error("injected fault in the decode step");
        if (!st.joined_prefilled_s.empty()) {
          // Prefill finished -> this sequence's first decode step starts: the hand-off's latency.
          const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
          if (ctx->metrics) {
            auto& h = ctx->metrics->histogram(metric_names::prefill_to_decode_latency,
                                              metric_names::prefill_to_decode_latency_help,
                                              metric_buckets::prefill_to_decode_latency(), ctx->labels);
            for (double t : st.joined_prefilled_s) h.observe(std::max(0.0, now - t));
          }
          st.joined_prefilled_s.clear();
        }
        step_result res = st.decoder->step();
        // Counters and the scheduler first, so that what a client reads after its final event
        // already includes this step.
        if (ctx->limits.draft && ctx->metrics) publish_spec_metrics(*ctx, st.decoder->speculation_stats());
        if (!res.finished.empty()) {
          finished_ids f{std::move(res.finished), {}, {}};
          for (auto& r : res.returned) {
            f.kvs.push_back(std::move(r.kv));
            f.kv_tokens.push_back(std::move(r.tokens));
          }
          self->send(scheduler, done_atom::value, std::move(f));
        }
        if (!res.failed.empty()) {
          sequence_failures f;
          for (auto& x : res.failed) {
            f.ids.push_back(x.id);
            f.codes.push_back(static_cast<uint8_t>(x.err.code));
            f.messages.push_back(std::move(x.err.message));
          }
          self->send(scheduler, fail_atom::value, std::move(f));
        }
        if (!res.events.empty()) self->send(front_door, step_atom::value, step_batch{std::move(res.events)});
        kick();
      },
  };
}

}  // namespace fw::actors
