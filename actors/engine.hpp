// engine: the actor runtime behind one model on one device, as a C++ object. Starting it spawns
// the front door, scheduler, supervisor and (through the supervisor) the prefill and decode
// workers on a small CAF system; requests stream their events to a callback; shutdown fails what
// is in flight cleanly and waits for every actor to finish. Used by the console, the server,
// the benchmark and the integration tests.
// Metrics: the engine owns a metrics_registry; the front door records per-request latencies,
// token counts and outcomes into it as they happen, and render_metrics() refreshes the gauges
// (running, waiting, KV usage, worker restarts) from stats() before rendering.
// Thread-safety: submit/cancel/stats/metrics/render_metrics may be called from any thread;
// callbacks run on CAF threads.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "actors/engine_context.hpp"
#include "actors/engine_faults.hpp"
#include "actors/node_board.hpp"
#include "actors/protocol/front_door_messages.hpp"
#include "actors/protocol/scheduler_protocol.hpp"
#include "actors/protocol/supervisor_protocol.hpp"
#include "runtime/base/expected.hpp"
#include "runtime/metrics/metrics_registry.hpp"

namespace fw::actors {

using event_callback = std::function<void(const stream_event&)>;

/// Everything one finished request produced (for blocking callers).
struct completed_request {
  stream_event final;  ///< kind done or error, with usage and timings
  std::vector<int32_t> tokens;
  std::string text;
  bool ok() const { return final.kind == static_cast<uint8_t>(stream_kind::done); }
};

/// What an engine is started with besides model, device and limits.
struct engine_options {
  /// Tests only: the fault-injection seam (engine_faults.hpp). Null in production.
  std::shared_ptr<const engine_faults> faults;
  /// A separate prefill device (physical prefill/decode separation): prompts run there and their
  /// KV moves to `device`, which decodes. Null: `device` does both. Owned by the engine.
  std::unique_ptr<backend> prefill_device;
  /// An offload device: long-tail sequences move there mid-generation (limits.offload) and finish
  /// there. Null: none. Owned by the engine.
  std::unique_ptr<backend> offload_device;
};

class engine {
 public:
  /// Takes shared ownership of the model and ownership of the device backend.
  static expected<std::unique_ptr<engine>> start(std::shared_ptr<const model> m, std::unique_ptr<backend> device,
                                                 engine_limits limits, engine_options options = {});
  ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  /// Starts a request; returns its id. Events (tokens..., then one final event) go to `on_event`.
  uint64_t submit(std::vector<int32_t> prompt, const sampling_params& params, event_callback on_event);
  /// Submits and waits for the final event.
  completed_request run(std::vector<int32_t> prompt, const sampling_params& params);
  void cancel(uint64_t id);
  expected<scheduler_stats> stats();
  /// The supervisor's view of each worker: crashes, escalations, running / restarting / down.
  expected<worker_health> health();
  /// Replays a telemetry trace (time-ordered samples, runtime/supervise/telemetry_trace) into the
  /// supervisor's degradation policy at `speed` times its own pace; returns once it is scheduled.
  expected<void> drill(std::vector<telemetry_sample> samples, double speed = 1.0);
  /// The engine's metrics (flywheel:* names); valid for the engine's lifetime.
  metrics_registry& metrics() { return metrics_; }
  /// The labels every engine series carries (model_name).
  const fw::metric_labels& metric_labels() const { return ctx_.labels; }
  /// Refreshes the gauges from stats() (skipped once shut down), then the Prometheus text.
  std::string render_metrics();
  /// Fails in-flight requests, stops every actor and waits for them. Idempotent.
  void shutdown();

  const model& get_model() const { return *model_; }
  backend& device() { return *device_; }
  /// The prefill device: device() unless the engine was started with a separate one.
  backend& prefill_device() { return prefill_device_ ? *prefill_device_ : *device_; }
  /// A decode node's prefill peers ([node] peers; empty without), and the prompts it prefilled itself.
  std::vector<peer_report> peers() const { return nodes_.peers(); }
  uint64_t local_prefills() const { return nodes_.local_prefills(); }
  /// The offload device, or null.
  backend* offload_device() { return offload_device_.get(); }
  const engine_limits& limits() const { return ctx_.limits; }

 private:
  engine() = default;
  struct impl;
  void publish_pd_metrics(const scheduler_stats& s);
  void publish_rollout_metrics(const scheduler_stats& s);
  void publish_health_metrics(const worker_health& h);
  void publish_node_metrics();

  std::shared_ptr<const model> model_;
  std::unique_ptr<backend> device_;
  std::unique_ptr<backend> prefill_device_;
  std::unique_ptr<backend> offload_device_;
  node_board nodes_;          // outlives impl_ (the node link writes it)
  metrics_registry metrics_;  // outlives impl_ (the actors that record into it)
  std::shared_ptr<const engine_faults> faults_;  // outlives impl_ (the workers ask it)
  engine_context ctx_;
  std::unique_ptr<impl> impl_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<bool> stopped_{false};
};

}  // namespace fw::actors
