// front_door_actor: where clients come in. Keeps each request's sink (the client's actor) and
// timings, forwards requests and cancels to the scheduler, and splits the decode worker's
// per-step batches into per-request stream events (token events, then one final event with
// usage and TTFT/TPOT, or an error event with the errc and message). A sink that dies cancels
// its request. It also records each request's TTFT, inter-token latencies, end-to-end latency,
// token counts and outcome into the engine's metrics registry (front_door_metrics).
// Protocol: actors/protocol/front_door_protocol.hpp.
#pragma once

#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <string>
#include <unordered_map>

#include "actors/protocol/front_door_protocol.hpp"
#include "runtime/metrics/metrics_registry.hpp"

namespace fw::actors {

struct client_entry {
  sink_actor sink;
  std::chrono::steady_clock::time_point submitted;
  std::chrono::steady_clock::time_point first_token;
  std::chrono::steady_clock::time_point last_token;
  bool has_first = false;
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  uint32_t cached_tokens = 0;  ///< prompt tokens the prefix cache served
};

/// The front door's instruments, created in a registry that outlives the actor. The actor only
/// updates them (lock-free counters, one short lock per histogram observation).
struct front_door_metrics {
  metrics_registry* registry = nullptr;
  metric_labels labels;  ///< {model_name}, on every instrument
  histogram_metric* ttft = nullptr;
  histogram_metric* inter_token = nullptr;
  histogram_metric* e2e = nullptr;
  counter_metric* prompt_tokens = nullptr;
  counter_metric* generation_tokens = nullptr;

  /// Registers every instrument (success and failure counters for the usual reasons at zero).
  static front_door_metrics create(metrics_registry& registry, const std::string& model_name);
  /// request_success_total{finished_reason} += 1 ("stop", "length").
  void record_success(const std::string& finish_reason) const;
  /// request_failure_total{reason} += 1; reason is an errc name ("cancelled", "timed out" ->
  /// "timed_out").
  void record_failure(const std::string& reason) const;
};

struct front_door_state {
  // CAF constructs a state from the actor pointer when it can; with C++20 aggregate
  // parenthesized init that would turn the pointer into the first member. Take it explicitly.
  explicit front_door_state(caf::local_actor*) {}

  scheduler_actor scheduler;
  const front_door_metrics* metrics = nullptr;  ///< null: not recorded
  std::unordered_map<uint64_t, client_entry> clients;
  static inline const char* name = "fw.front_door";
};

/// Spawned first; receives (init_atom, scheduler) before any client request. metrics may be null;
/// otherwise it must outlive the actor.
front_door_actor::behavior_type front_door(front_door_actor::stateful_pointer<front_door_state> self,
                                           const front_door_metrics* metrics);

}  // namespace fw::actors
