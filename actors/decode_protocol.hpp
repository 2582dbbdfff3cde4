// Protocol of the decode actor (continuous batching):
//   (decode_atom, decode_job)        a sequence joins the batch; its handle moves to decode
//   (cancel_atom, uint64_t id)       a sequence leaves; its KV is freed
//   (fault_atom)                     fault injection: the next step throws (tests)
// It sends, once per step that produced anything:
//   to the front door: (step_atom, step_batch)   tokens/text of every sequence in the step
//   to the scheduler:  (done_atom, finished_ids) the sequences that left the batch
#pragma once

#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actors/runtime_inspect.hpp"

namespace fw::actors {

using decode_atom = caf::atom_constant<caf::atom("decode")>;
using step_atom = caf::atom_constant<caf::atom("step")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using fault_atom = caf::atom_constant<caf::atom("fault")>;
using done_atom = caf::atom_constant<caf::atom("done")>;

struct decode_job {
  uint64_t id = 0;
  std::vector<int32_t> history;  ///< prompt tokens; all but the last are in kv
  sampling_params params;
  uint32_t budget = 0;           ///< tokens the sequence may generate
  kv_handle kv;
  float attention_entropy = -1;  ///< from the prefill, for the k policy; < 0: unknown
};

struct step_batch {
  std::vector<step_event> events;
};

struct finished_ids {
  std::vector<uint64_t> ids;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, decode_job& x) {
  return f(caf::meta::type_name("fw::actors::decode_job"), x.id, x.history, x.params, x.budget, x.kv,
           x.attention_entropy);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_batch& x) {
  return f(caf::meta::type_name("fw::actors::step_batch"), x.events);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, finished_ids& x) {
  return f(caf::meta::type_name("fw::actors::finished_ids"), x.ids);
}

}  // namespace fw::actors
