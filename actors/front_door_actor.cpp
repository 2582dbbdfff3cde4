#include "actors/front_door_actor.hpp"

#include <caf/all.hpp>


namespace fw::actors {
namespace {

using self_ptr = front_door_actor::stateful_pointer<front_door_state>;
using clock_type = std::chrono::steady_clock;

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}


metric_labels with_label(metric_labels labels, const char* name, std::string value) {
  labels.emplace_back(name, std::move(value));
  return labels;
}

stream_event final_event(uint64_t id, const client_entry& c, stream_kind kind) {
  const auto now = clock_type::now();
  stream_event e;
  e.id = id;
  e.kind = static_cast<uint8_t>(kind);
  e.prompt_tokens = c.prompt_tokens;
  e.completion_tokens = c.completion_tokens;
  e.cached_tokens = c.cached_tokens;
  e.total_ms = ms_between(c.submitted, now);
  if (c.has_first) {
    e.ttft_ms = ms_between(c.submitted, c.first_token);
    if (c.completion_tokens > 1) e.tpot_ms = ms_between(c.first_token, now) / (c.completion_tokens - 1);
  }
  return e;
}

void finish_with_error(self_ptr self, uint64_t id, errc code, const std::string& message) {
  auto it = self->state.clients.find(id);
  if (it == self->state.clients.end()) return;
  auto e = final_event(id, it->second, stream_kind::error);
  if (self->state.metrics) self->state.metrics->record_failure(to_string(code));
  e.finish_reason = to_string(code);
  e.error_code = static_cast<uint8_t>(code);
  e.error = message;
  self->send(it->second.sink, std::move(e));
  self->demonitor(it->second.sink.address());
  self->state.clients.erase(it);
}

}  // namespace

front_door_metrics front_door_metrics::create(metrics_registry& r, const std::string& model_name) {
  front_door_metrics m;
  m.registry = &r;
  m.labels = {{"model_name", model_name}};
  m.ttft = &r.histogram(series::time_to_first_token, m.labels);
  m.inter_token = &r.histogram(series::inter_token_latency, m.labels);
  m.e2e = &r.histogram(series::e2e_request_latency, m.labels);
  m.prompt_tokens = &r.counter(series::prompt_tokens, m.labels);
  m.generation_tokens = &r.counter(series::generation_tokens, m.labels);
  for (const char* reason : {"stop", "length"})
    r.counter(series::request_success, with_label(m.labels, "finished_reason", reason));
  r.counter(series::request_failure, with_label(m.labels, "reason", "cancelled"));
  return m;
}

void front_door_metrics::record_success(const std::string& finish_reason) const {
  registry->counter(series::request_success, with_label(labels, "finished_reason", finish_reason))
      .inc();
}

void front_door_metrics::record_failure(const std::string& reason) const {
  std::string r = reason;
  for (char& c : r)
    if (c == ' ') c = '_';
  registry->counter(series::request_failure, with_label(labels, "reason", std::move(r))).inc();
}

front_door_actor::behavior_type front_door(self_ptr self, const front_door_metrics* metrics) {
  self->state.metrics = metrics;
  self->set_down_handler([self](caf::down_msg& dm) {
    // A client sink went away: cancel whatever it was waiting for.
    std::vector<uint64_t> orphans;
    for (auto& [id, c] : self->state.clients)
      if (c.sink.address() == dm.source) orphans.push_back(id);
    for (uint64_t id : orphans) {
      self->state.clients.erase(id);
      if (self->state.metrics) self->state.metrics->record_failure(to_string(errc::cancelled));
      self->send(self->state.scheduler, cancel_atom::value, id);
    }
  });
  return {
      [=](init_atom, scheduler_actor scheduler) { self->state.scheduler = std::move(scheduler); },
      [=](generate_atom, client_request& req, sink_actor sink) {
        if (self->state.clients.count(req.id)) {
          stream_event e;
          e.id = req.id;
          e.kind = static_cast<uint8_t>(stream_kind::error);
          e.finish_reason = to_string(errc::invalid_argument);
          e.error_code = static_cast<uint8_t>(errc::invalid_argument);
          e.error = "duplicate request id " + std::to_string(req.id);
          if (self->state.metrics) self->state.metrics->record_failure(e.finish_reason);
          self->send(sink, std::move(e));
          return;
        }
        client_entry c;
        c.sink = sink;
        c.submitted = clock_type::now();
        c.prompt_tokens = static_cast<uint32_t>(req.prompt.size());
        self->monitor(sink);
        self->state.clients.emplace(req.id, std::move(c));
        self->send(self->state.scheduler, generate_atom::value, std::move(req));
      },
      [=](cancel_atom, uint64_t id) {
        finish_with_error(self, id, errc::cancelled, "request cancelled by the client");
        self->send(self->state.scheduler, cancel_atom::value, id);
      },
      [=](fail_atom, request_failure& f) { finish_with_error(self, f.id, static_cast<errc>(f.code), f.message); },
      [=](step_atom, step_batch& batch) {
        const auto now = clock_type::now();
        const front_door_metrics* m = self->state.metrics;
        for (auto& ev : batch.events) {
          auto it = self->state.clients.find(ev.id);
          if (it == self->state.clients.end()) continue;  // cancelled meanwhile
          auto& c = it->second;
          c.cached_tokens = ev.cached_tokens;
          if (ev.token >= 0) {
            if (!c.has_first) {
              c.has_first = true;
              c.first_token = now;
              if (m) {
                m->ttft->observe(seconds_between(c.submitted, now));
                m->prompt_tokens->inc(c.prompt_tokens);
              }
            } else if (m) {
              m->inter_token->observe(seconds_between(c.last_token, now));
            }
            c.last_token = now;
            ++c.completion_tokens;
            if (m) m->generation_tokens->inc();
          }
          if (ev.token >= 0 || !ev.text.empty() || !ev.prompt_logprobs.empty()) {
            stream_event e;
            e.id = ev.id;
            e.kind = static_cast<uint8_t>(stream_kind::token);
            if (ev.token >= 0) e.tokens.push_back(ev.token);
            e.text = std::move(ev.text);
            if (ev.has_logprob) {
              e.logprobs.push_back(ev.logprob);
              e.top_ids = std::move(ev.top_ids);
              e.top_logprobs = std::move(ev.top_logprobs);
            }
            e.prompt_logprobs = std::move(ev.prompt_logprobs);
            self->send(c.sink, std::move(e));
          }
          if (ev.finished) {
            auto e = final_event(ev.id, c, stream_kind::done);
            e.finish_reason = ev.finish_reason;
            if (m) {
              m->e2e->observe(e.total_ms / 1000.0);
              m->record_success(e.finish_reason);
            }
            self->send(c.sink, std::move(e));
            self->demonitor(c.sink.address());
            self->state.clients.erase(it);
          }
        }
      },
      [=](shutdown_atom) {
        std::vector<uint64_t> ids;
        for (auto& [id, c] : self->state.clients) ids.push_back(id);
        for (uint64_t id : ids) finish_with_error(self, id, errc::cancelled, "the runtime is shutting down");
        self->quit();
      },
  };
}

}  // namespace fw::actors
