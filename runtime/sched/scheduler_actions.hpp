// What the scheduler asks of the engine after an event (runtime/sched/scheduler): run a
// prefill on a worker, move KV with the transfer worker, give a sequence to a decode worker,
// cancel one there, fail a request towards its client. The scheduler actor turns each into one
// message; tests read them directly. A worker is named by its kind and the generation of that
// kind's current worker, so a reply from a worker that has since died and been replaced is
// recognised as stale. Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/sched/worker_messages.hpp"

namespace fw {

/// The engine's workers, one of each kind at a time (a dead one is replaced by the supervisor).
enum class worker_kind : uint8_t {
  prefill,   ///< prefills on the prefill device (the only one when co-located)
  fallback,  ///< separate devices: prefills on the decode device (the co-located route)
  transfer,  ///< moves KV between pools (prefill -> decode, decode -> offload)
  decode,    ///< continuous batching on the decode device
  offload,   ///< with an offload device: finishes the long-tail sequences there
  draft,     ///< with speculation: the decode worker's draft (the scheduler holds nothing of it)
};
inline constexpr size_t worker_kinds = 6;
const char* to_string(worker_kind k);

/// A running sequence the scheduler carries between decode workers (offload) without looking
/// inside: the decode worker's object, wrapped and unwrapped by the actor that holds it.
using carried_sequence = std::shared_ptr<void>;

/// Run job on the worker of this kind (prefill or fallback); its reply or failure comes back as
/// scheduler::prefill_finished / prefill_failed with the same kind and generation.
struct run_prefill {
  worker_kind worker = worker_kind::prefill;
  uint64_t generation = 0;
  prefill_job job;
};

/// Move KV with the transfer worker; back as scheduler::transfer_finished / transfer_failed.
struct run_transfer {
  transfer_job job;
};

/// A prefilled request joins the decode worker's batch.
struct run_decode {
  decode_job job;
};

/// A running sequence joins the batch of `worker` (decode or offload). kv set: the sequence's
/// KV moved (offload) and its handle becomes this one before it is handed over.
struct adopt_sequence {
  worker_kind worker = worker_kind::decode;
  carried_sequence seq;
  std::optional<kv_handle> kv;
};

/// The decode worker hands this running sequence over (it comes back as
/// scheduler::offload_requested): offload_policy chose it for the offload device. One that
/// finished first is simply not there (its done report is on the way).
struct hand_over {
  worker_kind worker = worker_kind::decode;
  uint64_t id = 0;
};

/// The worker holding a decoding request drops it (and hands its KV back).
struct cancel_decode {
  worker_kind worker = worker_kind::decode;
  uint64_t id = 0;
};

/// The request ends with this error towards its client.
struct fail_request {
  uint64_t id = 0;
  error e;
};

using scheduler_action =
    std::variant<run_prefill, run_transfer, run_decode, adopt_sequence, hand_over, cancel_decode, fail_request>;
using scheduler_actions = std::vector<scheduler_action>;

}  // namespace fw
