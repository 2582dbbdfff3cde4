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
#include "runtime/setup/runtime_parts.hpp"

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
};

class engine {
 public:
  /// Takes shared ownership of the model and ownership of the devices: a decoder (role decode or
  /// both), optionally a separate prefiller (prompts run there and their KV moves to the decoder)
  /// and an offloader (long-tail sequences move there mid-generation, limits.offload).
  static expected<std::unique_ptr<engine>> start(std::shared_ptr<const model> m, device_set devices,
                                                 engine_limits limits, engine_options options = {});
  /// One device that prefills and decodes.
  static expected<std::unique_ptr<engine>> start(std::shared_ptr<const model> m, std::unique_ptr<backend> device,
                                                 engine_limits limits, engine_options options = {}) {
    return start(std::move(m), device_set(std::move(device)), std::move(limits), std::move(options));
  }
  /// The one start of every door (console, server, benchmarks): the devices runtime_parts built
  /// (decode, and the prefill and offload devices when configured) move into the engine, which
  /// runs with `limits` (parts.limits(), or a tool's variation of them). The parts keep the
  /// model, the plugins and the draft, and must outlive the engine.
  static expected<std::unique_ptr<engine>> start(runtime_parts& parts, engine_limits limits,
                                                 engine_options options = {});
  static expected<std::unique_ptr<engine>> start(runtime_parts& parts) { return start(parts, parts.limits()); }
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
  /// The engine's devices, each with its role.
  const device_set& devices() const { return devices_; }
  /// The decode device.
  backend& device() { return *devices_.decoder(); }
  /// The prefill device: device() unless the engine was started with a separate one.
  backend& prefill_device() { return *devices_.prefiller(); }
  /// A decode node's prefill peers ([node] peers; empty without), and the prompts it prefilled itself.
  std::vector<peer_report> peers() const { return nodes_.peers(); }
  uint64_t local_prefills() const { return nodes_.local_prefills(); }
  /// The offload device, or null.
  backend* offload_device() { return devices_.offloader(); }
  const engine_limits& limits() const { return ctx_.limits; }

 private:
  engine() = default;
  struct impl;
  void publish_pd_metrics(const scheduler_stats& s);
  void publish_rollout_metrics(const scheduler_stats& s);
  void publish_health_metrics(const worker_health& h);
  void publish_node_metrics();

  std::shared_ptr<const model> model_;
  device_set devices_;
  node_board nodes_;          // outlives impl_ (the node link writes it)
  metrics_registry metrics_;  // outlives impl_ (the actors that record into it)
  std::shared_ptr<const engine_faults> faults_;  // outlives impl_ (the workers ask it)
  engine_context ctx_;
  std::unique_ptr<impl> impl_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<bool> stopped_{false};
};

}  // namespace fw::actors
