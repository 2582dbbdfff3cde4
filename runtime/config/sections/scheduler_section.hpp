// scheduler_section: [scheduler], admission and batching limits of the actor runtime. Read by
// runtime/setup into the engine's limits. Thread-safety: plain value.
#pragma once

#include <cstdint>

#include "runtime/config/sections/enum_names.hpp"

namespace fw {

/// The order a device that both prefills and decodes runs waiting prompts in: "shortest" (the
/// least prefill work left first, in slices of prefill_chunk tokens, a prompt waiting
/// prefill_max_wait_s first) or "fifo" (arrival order, whole prompts).
enum class prefill_order_type { shortest, fifo };
inline constexpr enum_table<prefill_order_type, 2> prefill_order_type_names = {{
    {prefill_order_type::shortest, "shortest"}, {prefill_order_type::fifo, "fifo"}}};

struct scheduler_section {
  uint32_t max_batch = 16;          ///< sequences decoded together in one step
  uint32_t max_queue = 256;         ///< requests waiting for admission before new ones are refused
  uint32_t prefill_chunk = 512;     ///< prompt tokens per prefill step
  /// On a device that also decodes: each prefill chunk is sized (at most prefill_chunk tokens)
  /// so that its predicted time stays within this many ms, from a fit of the chunks run so far,
  /// so a decode step waits behind at most about this much prefill. 0: off.
  double prefill_chunk_ms = 0;
  /// Decode steps go before waiting prefill chunks on a device doing both (logical separation):
  /// a decode step waits behind at most one chunk. false: first come, first served (co-located).
  bool decode_priority = true;
  prefill_order_type prefill_order = prefill_order_type::shortest;
  double prefill_max_wait_s = 2.0;  ///< "shortest": a prompt waiting this long goes first; 0: never
  /// With separate prefill and decode devices: a prompt whose prefill has not finished this long
  /// after admission is prefilled on the decode device instead (co-located failover); 0: never.
  double prefill_deadline_s = 3.0;
  /// With an offload device: a sequence that has generated more than this many tokens moves
  /// there while the decode device's free KV share is below offload_below_free_share.
  uint32_t offload_after_tokens = 512;
  double offload_below_free_share = 0.25;
  /// With an offload device: such sequences also move while the decode-time predictor expects
  /// the decode device's step to take longer than this many ms. 0: off.
  double offload_tpot_ms = 0;
  double request_timeout_s = 600;   ///< whole-request limit; 0: none
  /// A new sequence joins the decode batch only while the decode-time predictor (t = a*L + b*N,
  /// fitted online) expects a step within this many ms; an idle device always takes one. 0: off.
  double admission_tpot_ms = 0;
  bool operator==(const scheduler_section&) const = default;
};

}  // namespace fw
