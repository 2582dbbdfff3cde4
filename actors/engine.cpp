#include "actors/engine.hpp"

#include <caf/all.hpp>
#include <future>

#include "actors/front_door_actor.hpp"
#include "actors/node_network.hpp"
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
  /// networked: CAF's network layer too (over TLS when `tls` is enabled), for a decode node's
  /// prefill peers.
  engine_actor_config(bool networked, const link_tls& tls) {
    if (networked) {
      load_node_network(*this, tls);
      add_node_types(*this);
    }
    add_front_door_types(*this);
    add_scheduler_types(*this);
    add_prefill_types(*this);
    add_decode_types(*this);
    add_draft_types(*this);
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
  impl(bool networked, const link_tls& tls) : cfg(networked, tls) {}
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

expected<std::unique_ptr<engine>> engine::start(runtime_parts& parts, engine_limits limits, engine_options options) {
  if (!parts.device()) return make_error(errc::invalid_argument, "the runtime parts hold no device (started already?)");
  return start(parts.m, std::exchange(parts.devices, device_set{}), std::move(limits), std::move(options));
}

expected<std::unique_ptr<engine>> engine::start(std::shared_ptr<const model> m, device_set devices,
                                                engine_limits limits, engine_options options) {
  if (limits.max_batch == 0) return make_error(errc::invalid_argument, "max_batch must be at least 1");
  if (limits.prefill_chunk == 0) return make_error(errc::invalid_argument, "prefill_chunk must be at least 1");
  if (!devices.decoder()) return make_error(errc::invalid_argument, "no device decodes (role decode or both)");
  if (limits.nodes.tls.enabled() && !limits.nodes.peers.empty())
    if (auto ok = check_link_tls(limits.nodes.tls); !ok) return ok.err();
  const kv_layout& shape = devices.decoder()->kv_pool().layout();
  for (const auto& d : devices.all())
    if (!d.be->kv_pool().layout().same_token_shape(shape))
      return make_error(errc::invalid_argument, "the " + std::string(enum_name(device_role_names, d.role)) +
                                                    " and decode devices' KV pools have different shapes");
  std::unique_ptr<engine> e(new engine());
  e->model_ = std::move(m);
  e->devices_ = std::move(devices);
  e->ctx_.m = e->model_.get();
  e->ctx_.devices = &e->devices_;
  e->ctx_.limits = limits;
  e->faults_ = std::move(options.faults);
  e->ctx_.faults = e->faults_.get();
  if (e->ctx_.networked()) e->ctx_.nodes = &e->nodes_;
  e->impl_ = std::make_unique<impl>(e->ctx_.networked(), limits.nodes.tls);
  auto& im = *e->impl_;
  const std::string name = e->model_->config().name.empty() ? "unknown" : e->model_->config().name;
  im.fd_metrics = front_door_metrics::create(e->metrics_, name);
  const auto& labels = im.fd_metrics.labels;
  im.running = &e->metrics_.gauge(series::num_requests_running, labels);
  im.waiting = &e->metrics_.gauge(series::num_requests_waiting, labels);
  im.kv_usage = &e->metrics_.gauge(series::kv_cache_usage, labels);
  im.restarts = &e->metrics_.counter(series::worker_restarts, labels);
  im.prefix_queries = &e->metrics_.counter(series::prefix_cache_queries, labels);
  im.prefix_hits = &e->metrics_.counter(series::prefix_cache_hits, labels);
  im.prefix_hit_tokens = &e->metrics_.counter(series::prefix_cache_hit_tokens, labels);
  im.prefix_blocks = &e->metrics_.gauge(series::prefix_cache_blocks, labels);
  im.ignored_errors = &e->metrics_.counter(series::ignored_errors, labels);
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
  metrics_.counter(series::node_local_prefills, l)
      .advance_to(static_cast<double>(nodes_.local_prefills()));
  for (const auto& p : nodes_.peers()) {
    auto pl = l;
    pl.emplace_back("peer", p.address);
    metrics_.gauge(series::node_peer_connected, pl)
        .set(p.state == "connected" ? 1.0 : 0.0);
    auto counter = [&](const metric_series& s, double v) { metrics_.counter(s, pl).advance_to(v); };
    counter(series::node_peer_prefills, static_cast<double>(p.prefills));
    counter(series::node_peer_transfer_bytes, static_cast<double>(p.bytes));
    counter(series::node_peer_failovers, static_cast<double>(p.failovers));
    counter(series::node_peer_forged, static_cast<double>(p.forged));
    counter(series::node_peer_connects, static_cast<double>(p.connects));
    counter(series::node_peer_prefill_to_decode, p.transfer_s);
  }
}

void engine::publish_health_metrics(const worker_health& h) {
  const auto& l = ctx_.labels;
  double state = 0;
  for (double i = 0; const char* name : {"healthy", "link-degraded", "co-located", "cpu-fallback"}) {
    if (h.degradation == name) state = i;
    ++i;
  }
  metrics_.gauge(series::degradation_state, l).set(state);
  metrics_.counter(series::degradation_transitions, l)
      .advance_to(static_cast<double>(h.transitions_total));
  for (const auto& r : h.readings) {
    auto dl = l;
    dl.emplace_back("device", r.device);
    if (r.metric == "temperature_c")
      metrics_.gauge(series::device_temperature, dl).set(r.value);
    else if (r.metric == "link_gbps")
      metrics_.gauge(series::link_bandwidth, dl)
          .set(r.value * 1e9);
  }
  for (size_t i = 0; i < h.names.size(); ++i) {
    auto wl = l;
    wl.emplace_back("worker", h.names[i]);
    metrics_.counter(series::worker_crashes, wl)
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
  auto counter = [&](const metric_series& s, double v) { metrics_.counter(s, l).advance_to(v); };
  counter(series::kv_transfers, static_cast<double>(s.kv_transfers));
  counter(series::kv_transfer_bytes, static_cast<double>(s.kv_transfer_bytes));
  counter(series::kv_transfer_f32_bytes, static_cast<double>(s.kv_transfer_f32_bytes));
  counter(series::kv_transfer_seconds, s.kv_transfer_seconds);
  counter(series::kv_transfer_refused, static_cast<double>(s.kv_transfer_refused));
  counter(series::prefill_failovers, static_cast<double>(s.prefill_failovers));
  metrics_.gauge(series::kv_transfer_compression_ratio, l)
      .set(s.kv_transfer_f32_bytes ? static_cast<double>(s.kv_transfer_bytes) / s.kv_transfer_f32_bytes : 0.0);
  for (const auto& [role, depth] : {std::pair{"prefill", s.prefill_queue}, std::pair{"decode", s.decoding}}) {
    auto dl = l;
    dl.emplace_back("device", role);
    metrics_.gauge(series::device_queue_depth, dl)
        .set(static_cast<double>(depth));
  }
  counter(series::offloaded_sequences, static_cast<double>(s.offloaded));
  auto ol = l;
  ol.emplace_back("device", "offload");
  metrics_.gauge(series::device_queue_depth, ol)
      .set(static_cast<double>(s.offload_active));
  auto pl = l;
  pl.emplace_back("device", "prefill");
  metrics_.gauge(series::device_kv_usage, pl)
      .set(s.prefill_kv_total_blocks ? static_cast<double>(s.prefill_kv_used_blocks) / s.prefill_kv_total_blocks : 0.0);
}

void engine::publish_rollout_metrics(const scheduler_stats& s) {
  const auto& l = ctx_.labels;
  metrics_.gauge(series::rollout_stage, l)
      .set(s.rollout_stage);
  metrics_.gauge(series::rollout_share, l).set(s.rollout_share);
  metrics_.counter(series::rollout_decisions, l)
      .advance_to(static_cast<double>(s.rollout_decisions));
  for (size_t i = 0; i < s.rollout_requests.size(); ++i) {
    auto sl = l;
    sl.emplace_back("stage", std::to_string(i + 1));
    metrics_.gauge(series::rollout_stage_p99, sl)
        .set(s.rollout_p99_ms[i] / 1000);
    metrics_.gauge(series::rollout_stage_error_rate, sl)
        .set(s.rollout_error_rate[i]);
    metrics_.gauge(series::rollout_stage_draft_failure_rate, sl)
        .set(s.rollout_draft_failure[i]);
    metrics_.gauge(series::rollout_stage_requests, sl)
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
