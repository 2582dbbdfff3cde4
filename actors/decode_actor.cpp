#include "actors/decode_actor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "runtime/base/log.hpp"


namespace fw::actors {
namespace {

// Mirrors the decoder's cumulative speculation counters into the engine's registry (vLLM's
// spec_decode_* names). advance_to keeps them monotonic across decode-worker restarts.
void publish_spec_metrics(const engine_context& ctx, const spec_stats& s) {
  auto& reg = *ctx.metrics;
  reg.counter(series::spec_decode_num_drafts, ctx.labels)
      .advance_to(static_cast<double>(s.steps));
  reg.counter(series::spec_decode_num_draft_tokens, ctx.labels)
      .advance_to(static_cast<double>(s.draft_tokens));
  reg.counter(series::spec_decode_num_accepted_tokens, ctx.labels)
      .advance_to(static_cast<double>(s.accepted_tokens));
  for (size_t i = 0; i < s.accepted_at.size(); ++i) {
    metric_labels l = ctx.labels;
    l.emplace_back("position", std::to_string(i));
    reg.counter(series::spec_decode_num_accepted_tokens_per_pos, l)
        .advance_to(static_cast<double>(s.accepted_at[i]));
  }
}

// The draft actor's counters: what it drafted while the target waited, what it drafted ahead
// during verification, and how much of that was used (the overlap).
void publish_draft_metrics(const engine_context& ctx, const draft_pipeline_stats& s) {
  auto& reg = *ctx.metrics;
  reg.counter(series::spec_decode_draft_seconds, ctx.labels).advance_to(s.draft_ms / 1000.0);
  reg.counter(series::spec_decode_draft_ahead_seconds, ctx.labels).advance_to(s.ahead_ms / 1000.0);
  reg.counter(series::spec_decode_draft_hidden_seconds, ctx.labels).advance_to(s.hidden_ms / 1000.0);
  reg.counter(series::spec_decode_draft_ahead_hits, ctx.labels).advance_to(static_cast<double>(s.hits));
}

using self_ptr = decode_actor::stateful_pointer<decode_state>;

/// Starts drafting for sequences on the draft actor.
void begin_drafts(self_ptr self, draft_starts b) {
  if (self->state.draft && !b.seqs.empty()) self->send(self->state.draft, begin_atom::value, std::move(b));
}

/// Sequences that left the batch stop drafting.
void end_drafts(self_ptr self) {
  auto ids = self->state.decoder->take_draft_ends();
  if (self->state.draft && !ids.empty()) self->send(self->state.draft, end_atom::value, draft_ends{std::move(ids)});
}

/// A draft answer not back by then: the step goes on plainly (a hung draft must not stall decoding).
constexpr auto draft_reply_timeout = std::chrono::seconds(30);

}  // namespace

decode_actor::behavior_type decode_worker(decode_actor::stateful_pointer<decode_state> self, const engine_context* ctx,
                                          front_door_actor front_door, scheduler_actor scheduler, backend* device,
                                          bool offload) {
  self->state.decoder = std::make_unique<batch_decoder>(*ctx->m, *device, ctx->limits.max_batch);
  // The draft lives in the draft actor; the decoder plans k, asks, and verifies.
  if (!offload && ctx->limits.draft)
    self->state.decoder->set_remote_speculation({ctx->limits.draft->scores_proposals(), ctx->limits.draft->wants_hidden()},
                                                ctx->limits.policy);
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (!st.draft || dm.source != st.draft.address()) return;
    // Its sequences step plainly until the supervisor's replacement arrives (draft_atom).
    st.draft = draft_actor{};
    st.decoder->stop_all_speculation();
    log_warn("decode: the draft actor is gone; speculating sequences decode plainly until it is back");
  });
  // The scheduler is the one owner of every pool's block book: finished, failed and cancelled
  // sequences' KV goes back to it, never freed here.
  self->state.decoder->return_kv(true);
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
        seq->cached_tokens = job.cached_tokens;
        seq->prompt_logprobs = std::move(job.prompt_logprobs);
        if (!job.resumed.empty() && !seq->resume(job.resumed, ctx->m->vocab())) {
          // It had finished before its worker died (the scheduler never heard): nothing to add.
          self->send(scheduler, done_atom::value, finished_ids{{job.id}, {std::move(seq->kv())}, {{}}});
          return;
        }
        std::optional<float> entropy;
        if (job.attention_entropy >= 0) entropy = job.attention_entropy;
        // A request that allows drafts speculates (batch_decoder::add): begun on the draft actor,
        // or plain while there is none.
        const bool drafts = self->state.decoder->remote_speculation() && seq->params().max_draft_k != 0;
        draft_starts start;
        if (drafts && self->state.draft) start.seqs.push_back({seq->id(), seq->history(), seq->params()});
        const uint64_t id = seq->id();
        self->state.decoder->add(std::move(seq), entropy);
        if (drafts && !self->state.draft) self->state.decoder->stop_speculating(id);
        begin_drafts(self, std::move(start));
        if (job.prefilled_s > 0) self->state.joined_prefilled_s.push_back(job.prefilled_s);
        kick();
      },
      [=](offload_atom, uint64_t id) {
        // The scheduler's offload_policy chose this long tail: it moves with its KV handle (one
        // that finished meanwhile is not here; its done report is on the way).
        sequence_box box{std::make_shared<sequence_box::holder>()};
        box.h->seq = self->state.decoder->take(id);
        end_drafts(self);
        if (box.h->seq) self->send(scheduler, offload_atom::value, std::move(box));
      },
      [=](adopt_atom, sequence_box& box) {
        if (box.h && box.h->seq) self->state.decoder->add(std::move(box.h->seq));
        kick();
      },
      [=](degrade_atom, int32_t cap) { self->state.decoder->set_k_cap(cap); },
      [=](draft_atom, draft_actor d) {
        auto& st = self->state;
        if (offload || !st.decoder->remote_speculation()) return;
        st.draft = std::move(d);
        self->monitor(st.draft);
        self->send(st.draft, init_atom::value);  // what an earlier decode worker began is forgotten
        draft_starts b;
        for (const sequence* s : st.decoder->restart_speculation()) b.seqs.push_back({s->id(), s->history(), s->params()});
        begin_drafts(self, std::move(b));
      },
      [=](cancel_atom, uint64_t id) {
        if (auto kv = self->state.decoder->detach(id))
          self->send(scheduler, done_atom::value, finished_ids{{id}, {std::move(*kv)}, {{}}});
        end_drafts(self);
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
            auto& h = ctx->metrics->histogram(series::prefill_to_decode_latency, ctx->labels);
            for (double t : st.joined_prefilled_s) h.observe(std::max(0.0, now - t));
          }
          st.joined_prefilled_s.clear();
        }
        uint32_t rows = 0;
        uint64_t sum_context = 0;
        for (const sequence* s : st.decoder->sequences())
          if (rows < ctx->limits.max_batch) {
            ++rows;
            sum_context += s->kv().n_tokens + 1;
          }
        auto plan = std::make_shared<step_plan>(st.decoder->plan());
        end_drafts(self);
        const auto step_t0 = std::chrono::steady_clock::now();
        // After the proposals (if any): verify them with the plain rows in one forward, report.
        auto finish = [self, ctx, front_door, scheduler, offload, kick, plan, rows, sum_context, step_t0] {
          auto& st = self->state;
          step_result res = st.decoder->run(std::move(*plan));
          const double step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - step_t0).count();
          if (st.draft && !res.feedback.empty()) {
            draft_verdicts v;
            for (auto& f : res.feedback) v.verdicts.push_back({f.id, std::move(f.appended), std::move(f.hidden)});
            self->send(st.draft, verdict_atom::value, std::move(v));
          }
          end_drafts(self);
          // Counters and the scheduler first, so that what a client reads after its final event
          // already includes this step.
          if (!offload && ctx->limits.draft && ctx->metrics) publish_spec_metrics(*ctx, st.decoder->speculation_stats());
          if (!res.events.empty()) {
            // The scheduler hears of every token before the client does.
            step_tokens t;
            t.step_s = offload ? 0.0 : step_s;  // the scheduler's decode-time model is the decode device's
            t.rows = rows;
            t.sum_context = sum_context;
            for (const auto& v : res.verdicts) {
              t.draft_ids.push_back(v.id);
              t.draft_failed.push_back(v.failed ? 1 : 0);
            }
            for (const auto& ev : res.events)
              if (ev.token >= 0) {
                t.ids.push_back(ev.id);
                t.tokens.push_back(ev.token);
              }
            if (!t.ids.empty()) self->send(scheduler, progress_atom::value, std::move(t));
          }
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
            for (auto& r : res.returned_failed) f.kvs.push_back(std::move(r.kv));
            self->send(scheduler, fail_atom::value, std::move(f));
          }
          if (!res.events.empty()) self->send(front_door, step_atom::value, step_batch{std::move(res.events)});
          kick();
        };
        if (plan->asks.empty() || !st.draft) {
          finish();
          return;
        }
        // The step waits for the draft actor's answer (nothing else is handled meanwhile, so the
        // batch cannot change under the plan); a dead or silent draft actor makes it plain.
        self->request(st.draft, draft_reply_timeout, propose_atom::value, draft_asks{plan->asks})
            .await(
                [self, ctx, plan, step_t0, finish](draft_answers& a) {
                  plan->draft_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - step_t0).count();
                  self->state.decoder->fill_proposals(*plan, std::move(a.answers));
                  if (ctx->metrics) publish_draft_metrics(*ctx, a.stats);
                  finish();
                },
                [self, finish](caf::error& e) {
                  log_warn("decode: no proposals from the draft actor (" + self->system().render(e) + "); this step is plain");
                  finish();
                });
      },
  };
}

}  // namespace fw::actors
