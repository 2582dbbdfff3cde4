// One decode step of a batch decoder whose drafts come from a draft pipeline driven in-process,
// the way the draft actor drives it (the step's asks answered at once, the next step drafted
// ahead when the pipeline runs ahead, the verdicts and the ends sent back, the next proposals
// drafted after the verdicts); a plain step of a locally drafting decoder when `pipe` is null.
#pragma once

#include <vector>

#include "runtime/spec/drafts/draft_pipeline.hpp"
#include "runtime/step/batch_decoder.hpp"

namespace fw::test {

inline step_result pipeline_step(batch_decoder& dec, draft_pipeline* pipe) {
  step_plan p = dec.plan();
  if (pipe) {
    std::vector<draft_answer> answers = pipe->propose_batch(p.asks);
    const std::vector<draft_answer> answered = pipe->runs_ahead() ? answers : std::vector<draft_answer>{};
    dec.fill_proposals(p, std::move(answers));
    for (size_t i = 0; i < answered.size(); ++i) pipe->run_ahead(p.asks[i].id, answered[i].proposal, p.asks[i].k);
  }
  step_result res = dec.run(std::move(p));
  if (pipe) {
    std::vector<uint64_t> ids;
    for (const auto& f : res.feedback) {
      pipe->feedback(f.id, f.appended, f.hidden);
      ids.push_back(f.id);
    }
    pipe->draft_after_verdicts(ids);
    for (uint64_t id : dec.take_draft_ends()) pipe->end(id);
  }
  return res;
}

}  // namespace fw::test
