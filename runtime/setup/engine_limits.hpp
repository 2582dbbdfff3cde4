// engine_limits: what the actor runtime is told about one engine besides its model and device:
// the context window, the [scheduler] limits and the speculative draft with its k policy.
// Built by runtime_parts::limits() (the composition root); read-only afterwards.
// Thread-safety: plain value; the draft it points at is used by the decode worker only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/config/node_address.hpp"
#include "runtime/kv/kv_codec.hpp"
#include "runtime/net/link_tls.hpp"
#include "runtime/sched/offload_policy.hpp"
#include "runtime/spec/drafts/drafter.hpp"
#include "runtime/spec/k_policy.hpp"
#include "runtime/supervise/degradation_policy.hpp"
#include "runtime/supervise/pair_check.hpp"
#include "runtime/supervise/restart_policy.hpp"
#include "runtime/supervise/rollout_breaker.hpp"
#include "runtime/supervise/telemetry_feed.hpp"

namespace fw {

/// [node] of a decode node: the prefill nodes it sends prompts to, and how it watches them.
struct node_limits {
  std::vector<node_address> peers;  ///< empty: every prompt is prefilled here
  double heartbeat_s = 0.5;
  double heartbeat_timeout_s = 2.0;
  double reconnect_s = 0.1;
  double reconnect_max_s = 5.0;
  double deadline_s = 3.0;           ///< a remote prefill not back by then is redone locally
  uint32_t chunk_bytes = 1 << 20;    ///< KV stream bytes per message
  uint32_t min_remote_tokens = 1;
  device_identity self;              ///< this node, for the handshake (pair_check)
  std::string secret;                ///< shared with the peers (runtime/net/link_auth); empty: none
  link_tls tls;                      ///< the link's TLS files (runtime/net/link_tls); disabled: plain TCP
};

struct engine_limits {
  uint32_t n_ctx = 4096;          ///< context window per sequence
  uint32_t max_batch = 16;        ///< sequences decoded together
  uint32_t max_queue = 256;       ///< waiting requests before refusing
  uint32_t prefill_chunk = 256;   ///< prompt rows per prefill forward (decode interleaves)
  /// [scheduler] prefill_chunk_ms in seconds: on a device that also decodes, each prefill chunk
  /// is sized so that its predicted time stays within this (prefill_chunk_budget), at most
  /// prefill_chunk rows; 0: chunks of prefill_chunk rows.
  double prefill_chunk_s = 0;
  /// [scheduler] prefill_order = "shortest" (one device): prompts in slices of prefill_chunk
  /// tokens, the least work left first, one waiting prefill_max_wait_s first. false: FIFO.
  bool prefill_shortest_first = false;
  double prefill_max_wait_s = 2.0;
  double request_timeout_s = 600; ///< unfinished requests fail after this
  /// [scheduler] admission_tpot_ms in seconds: the predicted decode step a new sequence may not
  /// push the batch past (decode_time_predictor); 0: off.
  double admission_tpot_s = 0;
  /// Prefix cache: KV blocks of earlier prompts the scheduler keeps for requests that start with
  /// the same tokens (runtime/kv/prefix_cache), at most this many blocks; 0: off.
  uint32_t prefix_cache_blocks = 0;
  /// Separate prefill and decode devices: a prompt still not prefilled this long after admission
  /// is prefilled on the decode device instead (co-located failover); infinity: never.
  double prefill_deadline_s = 3.0;
  /// Separate devices: the wire format of the KV moved between their pools.
  kv_wire kv_transfer = kv_wire::f32;
  /// With an offload device: when the decode device hands long-tail sequences over.
  offload_limits offload{};
  /// [supervisor]: how dead workers are restarted, and how often a prompt whose prefill worker
  /// died on it is retried before its request fails.
  restart_limits restart{};
  uint32_t request_retries = 2;
  /// [supervisor]: telemetry thresholds and how often CPU sensors are polled (0: never).
  degradation_limits degradation{};
  double telemetry_poll_s = 1.0;
  /// telemetry_source plugins polled with the thermal zones (shared with runtime_parts).
  std::vector<std::shared_ptr<telemetry_feed>> telemetry_feeds;
  /// The KV wire while link-degraded; unset: kv_transfer (no change).
  std::optional<kv_wire> degraded_kv_transfer;
  /// [rollout] enabled: requests are served by stage (rollout_breaker); unset: all levers for all.
  std::optional<rollout_limits> rollout;
  /// [node] role decode: remote prefill nodes.
  node_limits nodes;
  /// Speculative decoding in the decode actor: the draft (owned by the caller, outliving the
  /// engine; used only from the decode actor) and its k policy. Null draft: plain decoding.
  drafter* draft = nullptr;
  /// [speculative] draft_threads > 0: the draft has threads of its own, so the draft actor drafts
  /// the next step while the target verifies this one (for drafts that can: drafter::drafts_ahead).
  bool draft_runs_ahead = false;
  k_policy policy{};
};

}  // namespace fw
