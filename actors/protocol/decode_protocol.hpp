// Protocol of the decode worker (continuous batching):
//   (decode_atom, decode_job)   a sequence joins the batch; its handle moves to the worker
//   (cancel_atom, uint64_t id)  a sequence leaves; its KV is freed
//   (step_atom)                 one decode step (the worker sends it to itself between steps)
//   (adopt_atom, sequence_box)  a running sequence joins (offload: its KV already in this pool)
//   (offload_atom, uint64_t id) the scheduler's offload_policy chose it: hand it over
//   (degrade_atom, int32_t cap) caps speculation's k (the supervisor, on a degraded link); < 0: none
//   (draft_atom, draft_actor)   the draft actor to ask for proposals (the supervisor, at start and
//                               after the draft actor restarts); speculating sequences are begun on it
// It sends, once per step that produced anything:
//   to the front door: (step_atom, step_batch)            tokens/text of every sequence
//   to the scheduler:  (progress_atom, step_tokens)      the tokens it produced, before the
//                                                         front door gets them (so the
//                                                         scheduler can re-admit a request
//                                                         from its history if the worker dies)
//                      (done_atom, finished_ids)          sequences that finished (KV freed, or
//                                                         handed over for the prefix cache)
//                      (fail_atom, sequence_failures)     sequences that failed (KV freed)
//                      (offload_atom, sequence_box)       the sequence the scheduler asked for
//                                                         (offload_atom, id), with its KV handle
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actors/protocol/atoms.hpp"
#include "actors/protocol/draft_protocol.hpp"
#include "actors/protocol/runtime_inspect.hpp"
#include "runtime/sched/worker_messages.hpp"
#include "runtime/step/sequence.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <memory>

// Inspectors of the runtime values this protocol carries (found by ADL in namespace fw).
namespace fw {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, decode_job& x) {
  return f(caf::meta::type_name("fw::actors::decode_job"), x.id, x.history, x.params, x.budget, x.kv,
           x.attention_entropy, x.prefilled_s, x.resumed, x.cached_tokens, x.prompt_logprobs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_tokens& x) {
  return f(caf::meta::type_name("fw::actors::step_tokens"), x.ids, x.tokens, x.draft_ids, x.draft_failed, x.step_s, x.rows, x.sum_context);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, finished_ids& x) {
  return f(caf::meta::type_name("fw::actors::finished_ids"), x.ids, x.kvs, x.kv_tokens);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sequence_failures& x) {
  return f(caf::meta::type_name("fw::actors::sequence_failures"), x.ids, x.codes, x.messages, x.kvs);
}

}  // namespace fw

namespace fw::actors {

// The runtime values this protocol carries, by their protocol names too.
using fw::decode_job;
using fw::step_tokens;
using fw::finished_ids;
using fw::sequence_failures;



/// A running sequence moving between decode workers (offload), with its KV handle inside. Local
/// only: never serialized (CAF_ALLOW_UNSAFE_MESSAGE_TYPE below).
struct sequence_box {
  struct holder {
    std::unique_ptr<sequence> seq;
  };
  std::shared_ptr<holder> h;
};

struct step_batch {
  std::vector<step_event> events;
};



}  // namespace fw::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fw::actors::sequence_box)

namespace fw::actors {

using decode_actor = caf::typed_actor<caf::reacts_to<decode_atom, decode_job>, caf::reacts_to<cancel_atom, uint64_t>,
                                      caf::reacts_to<step_atom>, caf::reacts_to<adopt_atom, sequence_box>,
                                      caf::reacts_to<offload_atom, uint64_t>,
                                      caf::reacts_to<degrade_atom, int32_t>,
                                      caf::reacts_to<draft_atom, draft_actor>>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_batch& x) {
  return f(caf::meta::type_name("fw::actors::step_batch"), x.events);
}

inline void add_decode_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<decode_job>("fw::actors::decode_job");
  cfg.add_message_type<step_batch>("fw::actors::step_batch");
  cfg.add_message_type<step_tokens>("fw::actors::step_tokens");
  cfg.add_message_type<finished_ids>("fw::actors::finished_ids");
  cfg.add_message_type<sequence_failures>("fw::actors::sequence_failures");
  cfg.add_message_type<decode_actor>("fw::actors::decode_actor");
}

}  // namespace fw::actors
