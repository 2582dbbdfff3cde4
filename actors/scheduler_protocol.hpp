// Protocol of the scheduler actor, which owns admission (runtime/scheduler_policy) and KV
// allocation and moves requests between the prefill and decode actors:
//   (generate_atom, client_request)             from the front door
//   (cancel_atom, uint64_t id)                  from the front door
//   (done_atom, finished_ids)                   from the decode actor
//   (worker_atom, worker_restart)               from the supervisor: a worker was replaced
//   (stats_atom) -> scheduler_stats              for consoles and tests
//   (tick_atom)                                  its own timer: request timeouts
// Failures go to the front door as (fail_atom, request_failure).
#pragma once

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

namespace fw::actors {

using worker_atom = caf::atom_constant<caf::atom("worker")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;

/// Which worker a supervisor restarted.
enum class worker_kind : uint8_t { prefill = 0, decode = 1 };

struct worker_restart {
  uint8_t kind = 0;  ///< worker_kind
  caf::actor replacement;
  std::string reason;  ///< why the old one died
};

struct scheduler_stats {
  uint64_t waiting = 0;
  uint64_t prefilling = 0;
  uint64_t decoding = 0;
  uint64_t kv_used_blocks = 0;
  uint64_t kv_total_blocks = 0;
  uint64_t completed = 0;
  uint64_t failed = 0;
  uint64_t worker_restarts = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_restart& x) {
  return f(caf::meta::type_name("fw::actors::worker_restart"), x.kind, x.replacement, x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scheduler_stats& x) {
  return f(caf::meta::type_name("fw::actors::scheduler_stats"), x.waiting, x.prefilling, x.decoding,
           x.kv_used_blocks, x.kv_total_blocks, x.completed, x.failed, x.worker_restarts);
}

}  // namespace fw::actors
