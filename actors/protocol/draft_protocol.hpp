// Protocol of the draft actor (speculative decoding's draft, beside the decode worker that
// verifies):
//   (init_atom)                      a new decode worker took over: every sequence is forgotten
//   (begin_atom, draft_starts)       sequences start drafting from their histories
//   (end_atom, draft_ends)           sequences left the batch (finished, failed, cancelled, moved)
//   (propose_atom, draft_asks)       -> draft_answers: up to k tokens for each sequence asked, plus
//                                       the draft's counters; with its own threads it then drafts
//                                       the next step ahead while the target verifies this one
//   (verdict_atom, draft_verdicts)   what each sequence's history gained in the step (accepted
//                                       drafts and the target's token) and the target's hidden state
//   (stats_atom)                     -> draft_pipeline_stats
// The decode worker sends verdicts before the next ask, so the draft actor sees them in order.
// The target's KV handles never leave the decode worker; a separate draft model's KV handles are
// the draft actor's own (one owner each).
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>

#include <cstdint>
#include <vector>

#include "actors/protocol/atoms.hpp"
#include "actors/protocol/runtime_inspect.hpp"
#include "runtime/spec/drafts/draft_answer.hpp"
#include "runtime/spec/drafts/draft_pipeline.hpp"

// Inspectors of the runtime values this protocol carries (found by ADL in namespace fw).
namespace fw {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, draft_proposal& x) {
  return f(caf::meta::type_name("fw::draft_proposal"), x.tokens, x.probs, x.confidence);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, draft_answer& x) {
  return f(caf::meta::type_name("fw::draft_answer"), x.id, x.proposal, x.failed, x.gone);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, draft_pipeline_stats& x) {
  return f(caf::meta::type_name("fw::draft_pipeline_stats"), x.asks, x.ahead, x.hits, x.draft_ms, x.ahead_ms,
           x.hidden_ms);
}

}  // namespace fw

namespace fw::actors {

/// One sequence that starts drafting: its whole history and its sampling parameters.
struct draft_start {
  uint64_t id = 0;
  std::vector<int32_t> history;
  sampling_params params;
};
struct draft_starts {
  std::vector<draft_start> seqs;
};
struct draft_ends {
  std::vector<uint64_t> ids;
};
/// Local only (never serialized): each ask lends the target's KV handle for its duration.
struct draft_asks {
  std::vector<draft_ask> asks;
};
struct draft_answers {
  std::vector<draft_answer> answers;
  draft_pipeline_stats stats;  ///< cumulative, after these answers
};
/// One sequence's verdict: the tokens its history gained, the target's hidden state (or empty).
struct draft_verdict {
  uint64_t id = 0;
  std::vector<int32_t> appended;
  std::vector<float> hidden;
};
struct draft_verdicts {
  std::vector<draft_verdict> verdicts;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, draft_start& x) {
  return f(caf::meta::type_name("fw::actors::draft_start"), x.id, x.history, x.params);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, draft_starts& x) {
  return f(caf::meta::type_name("fw::actors::draft_starts"), x.seqs);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, draft_ends& x) {
  return f(caf::meta::type_name("fw::actors::draft_ends"), x.ids);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, draft_answers& x) {
  return f(caf::meta::type_name("fw::actors::draft_answers"), x.answers, x.stats);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, draft_verdict& x) {
  return f(caf::meta::type_name("fw::actors::draft_verdict"), x.id, x.appended, x.hidden);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, draft_verdicts& x) {
  return f(caf::meta::type_name("fw::actors::draft_verdicts"), x.verdicts);
}

}  // namespace fw::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fw::actors::draft_asks)

namespace fw::actors {

using draft_actor = caf::typed_actor<caf::reacts_to<init_atom>, caf::reacts_to<begin_atom, draft_starts>,
                                     caf::reacts_to<end_atom, draft_ends>,
                                     caf::replies_to<propose_atom, draft_asks>::with<draft_answers>,
                                     caf::reacts_to<verdict_atom, draft_verdicts>,
                                     caf::replies_to<stats_atom>::with<draft_pipeline_stats>>;

inline void add_draft_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<draft_starts>("fw::actors::draft_starts");
  cfg.add_message_type<draft_ends>("fw::actors::draft_ends");
  cfg.add_message_type<draft_answers>("fw::actors::draft_answers");
  cfg.add_message_type<draft_verdicts>("fw::actors::draft_verdicts");
  cfg.add_message_type<draft_pipeline_stats>("fw::draft_pipeline_stats");
  cfg.add_message_type<draft_actor>("fw::actors::draft_actor");
}

}  // namespace fw::actors

