// Protocol of the decode worker (continuous batching):
//   (decode_atom, decode_job)   a sequence joins the batch; its handle moves to the worker
//   (cancel_atom, uint64_t id)  a sequence leaves; its KV is freed
//   (step_atom)                 one decode step (the worker sends it to itself between steps)
//   (adopt_atom, sequence_box)  a running sequence joins (offload: its KV already in this pool)
//   (degrade_atom, int32_t cap) caps speculation's k (the supervisor, on a degraded link); < 0: none
// It sends, once per step that produced anything:
//   to the front door: (step_atom, step_batch)            tokens/text of every sequence
//   to the scheduler:  (progress_atom, step_tokens)      the tokens it produced, before the
//                                                         front door gets them (so the
//                                                         scheduler can re-admit a request
//                                                         from its history if the worker dies)
//                      (done_atom, finished_ids)          sequences that finished (KV freed, or
//                                                         handed over for the prefix cache)
//                      (fail_atom, sequence_failures)     sequences that failed (KV freed)
//                      (offload_atom, sequence_box)       a long-tail sequence to move to the
//                                                         offload device (offload_policy)
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actors/protocol/atoms.hpp"
#include "actors/protocol/runtime_inspect.hpp"
#include "runtime/step/sequence.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <memory>

namespace fw::actors {

struct decode_job {
  uint64_t id = 0;
  std::vector<int32_t> history;  ///< prompt tokens; all but the last are in kv
  sampling_params params;
  uint32_t budget = 0;           ///< tokens the sequence may generate
  kv_handle kv;
  float attention_entropy = -1;  ///< from the prefill, for the k policy; < 0: unknown
  double prefilled_s = 0;        ///< steady-clock seconds when its prefill finished; 0: unknown
  /// Re-admitted after a decode worker died: the tokens it had generated (and streamed) then.
  /// history + resumed minus the last token are in kv; the sequence carries on after them.
  std::vector<int32_t> resumed;
  bool may_offload = true;  ///< false: it stays on this device (a rollout stage below 4)
};

/// The tokens one decode step produced: ids[i] generated tokens[i] (in order per sequence).
struct step_tokens {
  std::vector<uint64_t> ids;
  std::vector<int32_t> tokens;
  /// Sequences the draft was asked for this step, and whether it errored (the rollout breaker).
  std::vector<uint64_t> draft_ids;
  std::vector<uint8_t> draft_failed;
  /// The step itself, for the decode-time predictor: its seconds, the sequences it carried and
  /// the sum of their contexts (prompt + generated tokens).
  double step_s = 0;
  uint32_t rows = 0;
  uint64_t sum_context = 0;
};

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

struct finished_ids {
  std::vector<uint64_t> ids;
  /// With a prefix cache: the finished sequences' KV handed to the scheduler (the pool's owner)
  /// instead of freed, each with the tokens it holds (parallel vectors, possibly empty).
  std::vector<kv_handle> kvs;
  std::vector<std::vector<int32_t>> kv_tokens;
};

/// Sequences a step failed, each with its error's kind (fw::errc) and message.
struct sequence_failures {
  std::vector<uint64_t> ids;
  std::vector<uint8_t> codes;
  std::vector<std::string> messages;
};

}  // namespace fw::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fw::actors::sequence_box)

namespace fw::actors {

using decode_actor = caf::typed_actor<caf::reacts_to<decode_atom, decode_job>, caf::reacts_to<cancel_atom, uint64_t>,
                                      caf::reacts_to<step_atom>, caf::reacts_to<adopt_atom, sequence_box>,
                                      caf::reacts_to<degrade_atom, int32_t>>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, decode_job& x) {
  return f(caf::meta::type_name("fw::actors::decode_job"), x.id, x.history, x.params, x.budget, x.kv,
           x.attention_entropy, x.prefilled_s, x.resumed, x.may_offload);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_tokens& x) {
  return f(caf::meta::type_name("fw::actors::step_tokens"), x.ids, x.tokens, x.draft_ids, x.draft_failed, x.step_s, x.rows, x.sum_context);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_batch& x) {
  return f(caf::meta::type_name("fw::actors::step_batch"), x.events);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, finished_ids& x) {
  return f(caf::meta::type_name("fw::actors::finished_ids"), x.ids, x.kvs, x.kv_tokens);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sequence_failures& x) {
  return f(caf::meta::type_name("fw::actors::sequence_failures"), x.ids, x.codes, x.messages);
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
