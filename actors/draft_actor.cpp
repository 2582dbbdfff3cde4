#include "actors/draft_actor.hpp"

#include <caf/all.hpp>

#include <stdexcept>

#include "runtime/base/log.hpp"

namespace fw::actors {

draft_actor::behavior_type draft_worker(draft_actor::stateful_pointer<draft_state> self, const engine_context* ctx) {
  self->state.pipeline = std::make_unique<draft_pipeline>(*ctx->limits.draft, ctx->limits.draft_runs_ahead);
  return {
      [=](init_atom) { self->state.pipeline->clear(); },
      [=](begin_atom, draft_starts& b) {
        for (auto& s : b.seqs)
          if (auto ok = self->state.pipeline->begin(s.id, std::move(s.history), s.params); !ok)
            // The sequence decodes plainly: its next ask is answered `gone`.
            log_warn("draft: sequence " + std::to_string(s.id) + " cannot draft: " + ok.err().message);
      },
      [=](end_atom, draft_ends& e) {
        for (uint64_t id : e.ids) self->state.pipeline->end(id);
      },
      [=](propose_atom, draft_asks& a) -> caf::result<draft_answers> {
        if (ctx->faults && ctx->faults->crash_draft && ctx->faults->crash_draft())
          throw std::runtime_error("injected fault in the draft actor");
        auto& pipe = *self->state.pipeline;
        draft_answers out;
        out.answers = pipe.propose_batch(a.asks);
        if (!pipe.runs_ahead()) {
          out.stats = pipe.stats();
          return out;
        }
        // The answers go out first; the next step is drafted while the target verifies this one.
        std::vector<draft_proposal> answered;
        for (const auto& x : out.answers) answered.push_back(x.proposal);
        out.stats = pipe.stats();
        auto rp = self->make_response_promise<draft_answers>();
        rp.deliver(std::move(out));
        for (size_t i = 0; i < a.asks.size(); ++i) pipe.run_ahead(a.asks[i].id, answered[i], a.asks[i].k);
        return rp;
      },
      [=](verdict_atom, draft_verdicts& v) {
        auto& pipe = *self->state.pipeline;
        std::vector<uint64_t> ids;
        for (const auto& x : v.verdicts) {
          pipe.feedback(x.id, x.appended, x.hidden);
          ids.push_back(x.id);
        }
        // The next proposals now, while the decode worker reports the step (a draft that
        // proposes from the history alone; draft_pipeline::draft_after_verdicts).
        pipe.draft_after_verdicts(ids);
      },
      [=](stats_atom) { return self->state.pipeline->stats(); },
  };
}

}  // namespace fw::actors
