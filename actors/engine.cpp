#include "actors/engine.hpp"

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>

#include <future>

#include "actors/front_door_actor.hpp"
#include "actors/protocol/node_protocol.hpp"
#include "actors/protocol/errc_error.hpp"
#include "actors/scheduler_actor.hpp"
#include "actors/supervisor_actor.hpp"

namespace fw::actors {
namespace {

// Registers every message type of the engine's protocols. Heavy math runs on detached workers
// and the kernel thread pool, so CAF's own scheduler stays small and does not poll.
class engine_actor_config : public caf::actor_system_config {
 public:
  /// networked: CAF's network layer too, for a decode node's prefill peers.
  explicit engine_actor_config(bool networked) {
    if (networked) {
      load<caf::io::middleman>();
      add_node_types(*this);
    }
    add_front_door_types(*this);
    add_scheduler_types(*this);
    add_prefill_types(*this);
    add_decode_types(*this);
    add_supervisor_types(*this);
    add_transfer_types(*this);
    add_errc_category(*this);
    set("scheduler.policy", caf::atom("sharing"));
    set("scheduler.max-threads", 1);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

}  // namespace

struct engine::impl {
  explicit impl(bool networked) : cfg(networked) {}
  front_door_metrics fd_metrics;  // instruments in engine::metrics_; destroyed after the actors
  gauge_metric* running = nullptr;
  gauge_metric* waiting = nullptr;
  gauge_metric* kv_usage = nullptr;
  counter_metric* restarts = nullptr;
  counter_metric* prefix_queries = nullptr;
  counter_metric* prefix_hits = nullptr;
  counter_metric* prefix_hit_tokens = nullptr;
  gauge_metric* prefix_blocks = nullptr;
  counter_metric* ignored_errors = nullptr;
  engine_actor_config cfg;
  caf::actor_system system{cfg};
  front_door_actor front_door;
  scheduler_actor scheduler;
  supervisor_actor supervisor;
};

expected<std::unique_ptr<engine>> engine::start(std::shared_ptr<const model> m, std::unique_ptr<backend> device,
                                                engine_limits limits, engine_options options) {
  if (limits.max_batch == 0) return make_error(errc::invalid_argument, "max_batch must be at least 1");
  if (limits.prefill_chunk == 0) return make_error(errc::invalid_argument, "prefill_chunk must be at least 1");
  std::unique_ptr<engine> e(new engine());
  e->model_ = std::move(m);
  e->device_ = std::move(device);
  e->prefill_device_ = std::move(options.prefill_device);
  e->offload_device_ = std::move(options.offload_device);
  e->ctx_.offload_device = e->offload_device_.get();
  if (e->offload_device_ && !e->offload_device_->kv_pool().layout().same_token_shape(e->device_->kv_pool().layout()))
    return make_error(errc::invalid_argument, "the offload and decode devices' KV pools have different shapes");
  e->ctx_.m = e->model_.get();
  e->ctx_.device = e->device_.get();
  e->ctx_.prefill_device = e->prefill_device_ ? e->prefill_device_.get() : e->device_.get();
  if (e->prefill_device_ && !e->prefill_device_->kv_pool().layout().same_token_shape(e->device_->kv_pool().layout()))
    return make_error(errc::invalid_argument, "the prefill and decode devices' KV pools have different shapes");
  e->ctx_.limits = limits;
  e->faults_ = std::move(options.faults);
  e->ctx_.faults = e->faults_.get();
  if (e->ctx_.networked()) e->ctx_.nodes = &e->nodes_;
  e->impl_ = std::make_unique<impl>(e->ctx_.networked());
  auto& im = *e->impl_;
  const std::string name = e->model_->config().name.empty() ? "unknown" : e->model_->config().name;
  im.fd_metrics = front_door_metrics::create(e->metrics_, name);
  const auto& labels = im.fd_metrics.labels;
  im.running = &e->metrics_.gauge(metric_names::num_requests_running,
                                  "Number of requests in model execution batches (prefilling or decoding).", labels);
  im.waiting = &e->metrics_.gauge(metric_names::num_requests_waiting, "Number of requests waiting to be processed.",
                                  labels);
  im.kv_usage = &e->metrics_.gauge(metric_names::kv_cache_usage, "KV-cache usage. 1 means 100 percent usage.", labels);
  im.restarts = &e->metrics_.counter(metric_names::worker_restarts,
                                     "Number of prefill/decode workers restarted by the supervisor.", labels);
  im.prefix_queries = &e->metrics_.counter("flywheel:prefix_cache_queries_total",
                                            "Admitted requests that looked their prompt up in the prefix cache.", labels);
  im.prefix_hits = &e->metrics_.counter("flywheel:prefix_cache_hits_total",
                                        "Prefix-cache lookups that reused at least one KV block.", labels);
  im.prefix_hit_tokens = &e->metrics_.counter("flywheel:prefix_cache_hit_tokens_total",
                                              "Prompt tokens copied from the prefix cache instead of recomputed.", labels);
  im.prefix_blocks = &e->metrics_.gauge("flywheel:prefix_cache_blocks",
                                        "KV blocks the prefix cache holds (reclaimable; not in kv_cache_usage_perc).", labels);
  im.ignored_errors = &e->metrics_.counter("flywheel:ignored_errors_total",
                                           "Errors deliberately not acted on (KV releases on cleanup paths), process-wide; "
                                           "each is also logged as a warning.",
                                           labels);
  e->ctx_.metrics = &e->metrics_;
  e->ctx_.labels = labels;
  auto& sys = im.system;
  e->impl_->front_door = sys.spawn(front_door, &im.fd_metrics);
  e->impl_->scheduler = sys.spawn(scheduler, &e->ctx_, e->impl_->front_door);
  caf::anon_send(e->impl_->front_door, init_atom::value, e->impl_->scheduler);
  e->impl_->supervisor = sys.spawn(supervisor, &e->ctx_, e->impl_->front_door, e->impl_->scheduler);
  caf::scoped_actor self{sys};
  bool ok = false;
  self->request(e->impl_->supervisor, std::chrono::seconds(10), init_atom::value)
      .receive([&](ok_atom) { ok = true; }, [&](caf::error&) { ok = false; });
  if (!ok) return make_error(errc::internal, "the supervisor did not start its workers");
  return e;
}

engine::~engine() { shutdown(); }

uint64_t engine::submit(std::vector<int32_t> prompt, const sampling_params& params, event_callback on_event) {
  const uint64_t id = next_id_.fetch_add(1);
  if (stopped_.load()) {
    stream_event e;
    e.id = id;
    e.kind = static_cast<uint8_t>(stream_kind::error);
    e.finish_reason = to_string(errc::cancelled);
    e.error_code = static_cast<uint8_t>(errc::cancelled);
    e.error = "the runtime is shut down";
    on_event(e);
    return id;
  }
  // The request's sink: calls the callback, and ends the request with an error if the front
  // door dies before the final event (so no caller waits forever).
  auto fd = impl_->front_door;
  auto sink = impl_->system.spawn([cb = std::move(on_event), fd, id](sink_actor::pointer self) -> sink_actor::behavior_type {
    self->monitor(fd);
    self->set_down_handler([=](caf::down_msg&) {
      stream_event e;
      e.id = id;
      e.kind = static_cast<uint8_t>(stream_kind::error);
      e.finish_reason = to_string(errc::cancelled);
      e.error_code = static_cast<uint8_t>(errc::cancelled);
      e.error = "the runtime stopped before the request finished";
      cb(e);
      self->quit();
    });
    return {[=](stream_event& e) {
      cb(e);
      if (e.kind != static_cast<uint8_t>(stream_kind::token)) self->quit();
    }};
  });
  client_request req;
  req.id = id;
  req.prompt = std::move(prompt);
  req.params = params;
  caf::anon_send(impl_->front_door, generate_atom::value, std::move(req), sink);
  return id;
}

completed_request engine::run(std::vector<int32_t> prompt, const sampling_params& params) {
  auto result = std::make_shared<completed_request>();
  std::promise<void> done;
  auto fut = done.get_future();
  submit(std::move(prompt), params, [result, &done](const stream_event& e) {
    if (e.kind == static_cast<uint8_t>(stream_kind::token)) {
      result->tokens.insert(result->tokens.end(), e.tokens.begin(), e.tokens.end());
      result->text += e.text;
    } else {
      result->final = e;
      done.set_value();
    }
  });
  fut.wait();
  return *result;
}

void engine::cancel(uint64_t id) {
  if (!stopped_.load()) caf::anon_send(impl_->front_door, cancel_atom::value, id);
}

expected<scheduler_stats> engine::stats() {
  if (stopped_.load()) return make_error(errc::cancelled, "the runtime is shut down");
  caf::scoped_actor self{impl_->system};
  expected<scheduler_stats> out = make_error(errc::timed_out, "the scheduler did not answer");
  self->request(impl_->scheduler, std::chrono::seconds(10), stats_atom::value)
      .receive([&](scheduler_stats& s) { out = s; },
               [&](caf::error& err) { out = from_caf_error(err); });
  return out;
}

expected<worker_health> engine::health() {
  if (stopped_.load()) return make_error(errc::cancelled, "the runtime is shut down");
  caf::scoped_actor self{impl_->system};
  expected<worker_health> out = make_error(errc::timed_out, "the supervisor did not answer");
  self->request(impl_->supervisor, std::chrono::seconds(10), health_atom::value)
      .receive([&](worker_health& h) { out = h; },
               [&](caf::error& err) { out = from_caf_error(err); });
  return out;
}

std::string engine::render_metrics() {
  if (auto s = stats()) {
    impl_->running->set(static_cast<double>(s->prefilling + s->decoding));
    impl_->waiting->set(static_cast<double>(s->waiting));
    impl_->kv_usage->set(s->kv_total_blocks ? static_cast<double>(s->kv_used_blocks) / s->kv_total_blocks : 0.0);
    impl_->restarts->advance_to(static_cast<double>(s->worker_restarts));
    impl_->prefix_queries->advance_to(static_cast<double>(s->prefix_cache_queries));
    impl_->prefix_hits->advance_to(static_cast<double>(s->prefix_cache_hits));
    impl_->prefix_hit_tokens->advance_to(static_cast<double>(s->prefix_cache_hit_tokens));
    impl_->prefix_blocks->set(static_cast<double>(s->prefix_cache_blocks));
    if (s->physical || s->offload_device) publish_pd_metrics(*s);
    if (s->rollout_stage > 0) publish_rollout_metrics(*s);
  }
  if (auto h = health()) publish_health_metrics(*h);
  if (ctx_.nodes) publish_node_metrics();
  if (impl_) impl_->ignored_errors->advance_to(static_cast<double>(ignored_error_count()));
  return metrics_.render();
}

void engine::publish_node_metrics() {
  const auto& l = ctx_.labels;
  metrics_.counter("flywheel:node_local_prefills_total",
                   "Prompts this decode node prefilled itself (no peer up, short, cached prefix, or failed over).", l)
      .advance_to(static_cast<double>(nodes_.local_prefills()));
  for (const auto& p : nodes_.peers()) {
    auto pl = l;
    pl.emplace_back("peer", p.address);
    metrics_.gauge("flywheel:node_peer_connected", "1 while the prefill node is connected (handshake passed, heartbeats answered).", pl)
        .set(p.state == "connected" ? 1.0 : 0.0);
    auto counter = [&](const char* name, const char* help, double v) { metrics_.counter(name, help, pl).advance_to(v); };
    counter("flywheel:node_peer_prefills_total", "Prompts the prefill node prefilled for this node.", static_cast<double>(p.prefills));
    counter("flywheel:node_peer_transfer_bytes_total", "KV stream bytes received from the prefill node.", static_cast<double>(p.bytes));
    counter("flywheel:node_peer_failovers_total", "Prefills of the peer redone here (lost, late or refused stream).",
            static_cast<double>(p.failovers));
    counter("flywheel:node_peer_connects_total", "Handshakes with the peer that passed.", static_cast<double>(p.connects));
    counter("flywheel:node_peer_prefill_to_decode_seconds_total",
            "Prefill-to-decode latency summed: round trip minus the peer's forward passes, plus the KV decode.", p.transfer_s);
  }
}

void engine::publish_health_metrics(const worker_health& h) {
  const auto& l = ctx_.labels;
  double state = 0;
  for (double i = 0; const char* name : {"healthy", "link-degraded", "co-located", "cpu-fallback"}) {
    if (h.degradation == name) state = i;
    ++i;
  }
  metrics_.gauge("flywheel:degradation_state",
                 "Degradation state: 0 healthy, 1 link-degraded, 2 co-located, 3 cpu-fallback.", l).set(state);
  metrics_.counter("flywheel:degradation_transitions_total", "Degradation state changes the supervisor applied.", l)
      .advance_to(static_cast<double>(h.transitions_total));
  for (const auto& r : h.readings) {
    auto dl = l;
    dl.emplace_back("device", r.device);
    if (r.metric == "temperature_c")
      metrics_.gauge("flywheel:device_temperature_celsius", "Latest device temperature from telemetry.", dl).set(r.value);
    else if (r.metric == "link_gbps")
      metrics_.gauge("flywheel:link_bandwidth_bytes_per_second", "Latest link bandwidth from telemetry.", dl)
          .set(r.value * 1e9);
  }
  for (size_t i = 0; i < h.names.size(); ++i) {
    auto wl = l;
    wl.emplace_back("worker", h.names[i]);
    metrics_.counter("flywheel:worker_crashes_total", "Worker deaths the supervisor saw, per worker.", wl)
        .advance_to(static_cast<double>(h.crashes[i]));
  }
}

expected<void> engine::drill(std::vector<telemetry_sample> samples, double speed) {
  if (stopped_.load()) return make_error(errc::cancelled, "the runtime is shut down");
  if (samples.empty()) return make_error(errc::invalid_argument, "a drill needs at least one sample");
  caf::scoped_actor self{impl_->system};
  expected<void> out = make_error(errc::timed_out, "the supervisor did not answer");
  self->request(impl_->supervisor, std::chrono::seconds(10), drill_atom::value, telemetry_drill{std::move(samples), speed})
      .receive([&](ok_atom) { out = {}; }, [&](caf::error& err) { out = from_caf_error(err); });
  return out;
}

void engine::publish_pd_metrics(const scheduler_stats& s) {
  const auto& l = ctx_.labels;
  auto counter = [&](const char* name, const char* help, double v) { metrics_.counter(name, help, l).advance_to(v); };
  counter("flywheel:kv_transfers_total", "Sequences whose KV moved from the prefill to the decode device.",
          static_cast<double>(s.kv_transfers));
  counter("flywheel:kv_transfer_bytes_total", "kv_codec stream bytes moved between devices.",
          static_cast<double>(s.kv_transfer_bytes));
  counter("flywheel:kv_transfer_f32_bytes_total",
          "What the moved tokens take as an f32 cache (compression ratio = bytes / this).",
          static_cast<double>(s.kv_transfer_f32_bytes));
  counter("flywheel:kv_transfer_seconds_total", "Time spent encoding and decoding KV streams.", s.kv_transfer_seconds);
  counter("flywheel:kv_transfer_refused_total", "KV streams refused (corrupt or truncated); the prompt was recomputed.",
          static_cast<double>(s.kv_transfer_refused));
  counter("flywheel:prefill_failovers_total",
          "Prefills moved to the decode device (co-located) after the prefill device missed the deadline or failed.",
          static_cast<double>(s.prefill_failovers));
  metrics_.gauge("flywheel:kv_transfer_compression_ratio", "Transferred KV bytes / the f32 cache size of the same tokens.", l)
      .set(s.kv_transfer_f32_bytes ? static_cast<double>(s.kv_transfer_bytes) / s.kv_transfer_f32_bytes : 0.0);
  for (const auto& [role, depth] : {std::pair{"prefill", s.prefill_queue}, std::pair{"decode", s.decoding}}) {
    auto dl = l;
    dl.emplace_back("device", role);
    metrics_.gauge("flywheel:device_queue_depth", "Requests on each device: prefilling there, or decoding.", dl)
        .set(static_cast<double>(depth));
  }
  counter("flywheel:offloaded_sequences_total", "Sequences moved to the offload device mid-generation.",
          static_cast<double>(s.offloaded));
  auto ol = l;
  ol.emplace_back("device", "offload");
  metrics_.gauge("flywheel:device_queue_depth", "Requests on each device: prefilling there, or decoding.", ol)
      .set(static_cast<double>(s.offload_active));
  auto pl = l;
  pl.emplace_back("device", "prefill");
  metrics_.gauge("flywheel:device_kv_usage_perc", "KV-cache usage of each device's pool.", pl)
      .set(s.prefill_kv_total_blocks ? static_cast<double>(s.prefill_kv_used_blocks) / s.prefill_kv_total_blocks : 0.0);
}

void engine::publish_rollout_metrics(const scheduler_stats& s) {
  const auto& l = ctx_.labels;
  metrics_.gauge("flywheel:rollout_stage", "The [rollout] stage rolling out: 1 quantization .. 4 physical PD and offload.", l)
      .set(s.rollout_stage);
  metrics_.gauge("flywheel:rollout_share", "Share of new requests the rolling-out stage serves.", l).set(s.rollout_share);
  metrics_.counter("flywheel:rollout_decisions_total", "Rollout advances and circuit-breaker trips.", l)
      .advance_to(static_cast<double>(s.rollout_decisions));
  for (size_t i = 0; i < s.rollout_requests.size(); ++i) {
    auto sl = l;
    sl.emplace_back("stage", std::to_string(i + 1));
    metrics_.gauge("flywheel:rollout_stage_p99_seconds_per_token", "P99 latency per token of each stage's window.", sl)
        .set(s.rollout_p99_ms[i] / 1000);
    metrics_.gauge("flywheel:rollout_stage_error_rate", "Error rate of each stage's window.", sl)
        .set(s.rollout_error_rate[i]);
    metrics_.gauge("flywheel:rollout_stage_draft_failure_rate", "Draft proposals that errored, of each stage's window.", sl)
        .set(s.rollout_draft_failure[i]);
    metrics_.gauge("flywheel:rollout_stage_requests", "Outcomes in each stage's window.", sl)
        .set(static_cast<double>(s.rollout_requests[i]));
  }
}

void engine::shutdown() {
  if (stopped_.exchange(true) || !impl_) return;
  auto& sys = impl_->system;
  caf::anon_send(impl_->supervisor, shutdown_atom::value);
  caf::anon_send(impl_->front_door, shutdown_atom::value);
  caf::anon_send_exit(impl_->scheduler, caf::exit_reason::user_shutdown);
  sys.await_all_actors_done();
  impl_.reset();
}

}  // namespace fw::actors
