#include "actors/engine.hpp"

#include <caf/all.hpp>

#include <future>

#include "actors/decode_protocol.hpp"
#include "actors/front_door_actor.hpp"
#include "actors/prefill_protocol.hpp"
#include "actors/scheduler_actor.hpp"
#include "actors/supervisor_actor.hpp"

namespace fw::actors {
namespace {

// Registers every message type of the engine's protocols. Heavy math runs on detached workers
// and the kernel thread pool, so CAF's own scheduler stays small and does not poll.
class engine_actor_config : public caf::actor_system_config {
 public:
  engine_actor_config() {
    add_message_type<client_request>("fw::actors::client_request");
    add_message_type<stream_event>("fw::actors::stream_event");
    add_message_type<request_failure>("fw::actors::request_failure");
    add_message_type<prefill_job>("fw::actors::prefill_job");
    add_message_type<prefill_done>("fw::actors::prefill_done");
    add_message_type<decode_job>("fw::actors::decode_job");
    add_message_type<step_batch>("fw::actors::step_batch");
    add_message_type<finished_ids>("fw::actors::finished_ids");
    add_message_type<worker_restart>("fw::actors::worker_restart");
    add_message_type<scheduler_stats>("fw::actors::scheduler_stats");
    set("scheduler.policy", caf::atom("sharing"));
    set("scheduler.max-threads", 1);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

}  // namespace

struct engine::impl {
  front_door_metrics fd_metrics;  // instruments in engine::metrics_; destroyed after the actors
  gauge_metric* running = nullptr;
  gauge_metric* waiting = nullptr;
  gauge_metric* kv_usage = nullptr;
  counter_metric* restarts = nullptr;
  engine_actor_config cfg;
  caf::actor_system system{cfg};
  caf::actor front_door, scheduler, supervisor;
};

expected<std::unique_ptr<engine>> engine::start(std::shared_ptr<const model> m, std::unique_ptr<backend> device,
                                                engine_limits limits) {
  if (limits.max_batch == 0) return make_error(errc::invalid_argument, "max_batch must be at least 1");
  if (limits.prefill_chunk == 0) return make_error(errc::invalid_argument, "prefill_chunk must be at least 1");
  std::unique_ptr<engine> e(new engine());
  e->model_ = std::move(m);
  e->device_ = std::move(device);
  e->ctx_.m = e->model_.get();
  e->ctx_.device = e->device_.get();
  e->ctx_.limits = limits;
  e->impl_ = std::make_unique<impl>();
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
  e->ctx_.metrics = &e->metrics_;
  e->ctx_.labels = labels;
  auto& sys = im.system;
  e->impl_->front_door = sys.spawn(front_door_actor, &im.fd_metrics);
  e->impl_->scheduler = sys.spawn(scheduler_actor, &e->ctx_, e->impl_->front_door);
  caf::anon_send(e->impl_->front_door, init_atom::value, e->impl_->scheduler);
  e->impl_->supervisor = sys.spawn(supervisor_actor, &e->ctx_, e->impl_->front_door, e->impl_->scheduler);
  caf::scoped_actor self{sys};
  bool ok = false;
  self->request(e->impl_->supervisor, std::chrono::seconds(10), init_atom::value)
      .receive([&](caf::atom_value) { ok = true; }, [&](caf::error&) { ok = false; });
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
    e.error = "the runtime is shut down";
    on_event(e);
    return id;
  }
  // The request's sink: calls the callback, and ends the request with an error if the front
  // door dies before the final event (so no caller waits forever).
  auto fd = impl_->front_door;
  auto sink = impl_->system.spawn([cb = std::move(on_event), fd, id](caf::event_based_actor* self) -> caf::behavior {
    self->monitor(fd);
    self->set_down_handler([=](caf::down_msg&) {
      stream_event e;
      e.id = id;
      e.kind = static_cast<uint8_t>(stream_kind::error);
      e.finish_reason = to_string(errc::cancelled);
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

void engine::inject_fault(worker_kind kind) {
  if (!stopped_.load()) caf::anon_send(impl_->supervisor, fault_atom::value, static_cast<uint8_t>(kind));
}

expected<scheduler_stats> engine::stats() {
  if (stopped_.load()) return make_error(errc::cancelled, "the runtime is shut down");
  caf::scoped_actor self{impl_->system};
  expected<scheduler_stats> out = make_error(errc::timed_out, "the scheduler did not answer");
  self->request(impl_->scheduler, std::chrono::seconds(10), stats_atom::value)
      .receive([&](scheduler_stats& s) { out = s; },
               [&](caf::error& err) { out = make_error(errc::internal, impl_->system.render(err)); });
  return out;
}

std::string engine::render_metrics() {
  if (auto s = stats()) {
    impl_->running->set(static_cast<double>(s->prefilling + s->decoding));
    impl_->waiting->set(static_cast<double>(s->waiting));
    impl_->kv_usage->set(s->kv_total_blocks ? static_cast<double>(s->kv_used_blocks) / s->kv_total_blocks : 0.0);
    impl_->restarts->advance_to(static_cast<double>(s->worker_restarts));
  }
  return metrics_.render();
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
