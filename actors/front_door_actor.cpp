#include "actors/front_door_actor.hpp"

#include <caf/all.hpp>

#include "actors/decode_protocol.hpp"

namespace fw::actors {
namespace {

using self_ptr = caf::stateful_actor<front_door_state>*;
using clock_type = std::chrono::steady_clock;

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

stream_event final_event(uint64_t id, const client_entry& c, stream_kind kind) {
  const auto now = clock_type::now();
  stream_event e;
  e.id = id;
  e.kind = static_cast<uint8_t>(kind);
  e.prompt_tokens = c.prompt_tokens;
  e.completion_tokens = c.completion_tokens;
  e.total_ms = ms_between(c.submitted, now);
  if (c.has_first) {
    e.ttft_ms = ms_between(c.submitted, c.first_token);
    if (c.completion_tokens > 1) e.tpot_ms = ms_between(c.first_token, now) / (c.completion_tokens - 1);
  }
  return e;
}

void finish_with_error(self_ptr self, uint64_t id, const std::string& code, const std::string& message) {
  auto it = self->state.clients.find(id);
  if (it == self->state.clients.end()) return;
  auto e = final_event(id, it->second, stream_kind::error);
  e.finish_reason = code;
  e.error = message;
  self->send(it->second.sink, std::move(e));
  self->demonitor(it->second.sink);
  self->state.clients.erase(it);
}

}  // namespace

caf::behavior front_door_actor(self_ptr self) {
  self->set_down_handler([self](caf::down_msg& dm) {
    // A client sink went away: cancel whatever it was waiting for.
    std::vector<uint64_t> orphans;
    for (auto& [id, c] : self->state.clients)
      if (c.sink.address() == dm.source) orphans.push_back(id);
    for (uint64_t id : orphans) {
      self->state.clients.erase(id);
      self->send(self->state.scheduler, cancel_atom::value, id);
    }
  });
  return {
      [=](init_atom, caf::actor scheduler) { self->state.scheduler = std::move(scheduler); },
      [=](generate_atom, client_request& req, caf::actor sink) {
        if (self->state.clients.count(req.id)) {
          stream_event e;
          e.id = req.id;
          e.kind = static_cast<uint8_t>(stream_kind::error);
          e.finish_reason = to_string(errc::invalid_argument);
          e.error = "duplicate request id " + std::to_string(req.id);
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
        finish_with_error(self, id, to_string(errc::cancelled), "request cancelled by the client");
        self->send(self->state.scheduler, cancel_atom::value, id);
      },
      [=](fail_atom, request_failure& f) { finish_with_error(self, f.id, f.code, f.message); },
      [=](step_atom, step_batch& batch) {
        const auto now = clock_type::now();
        for (auto& ev : batch.events) {
          auto it = self->state.clients.find(ev.id);
          if (it == self->state.clients.end()) continue;  // cancelled meanwhile
          auto& c = it->second;
          if (ev.token >= 0) {
            if (!c.has_first) {
              c.has_first = true;
              c.first_token = now;
            }
            ++c.completion_tokens;
          }
          if (ev.token >= 0 || !ev.text.empty()) {
            stream_event e;
            e.id = ev.id;
            e.kind = static_cast<uint8_t>(stream_kind::token);
            if (ev.token >= 0) e.tokens.push_back(ev.token);
            e.text = std::move(ev.text);
            self->send(c.sink, std::move(e));
          }
          if (ev.finished) {
            auto e = final_event(ev.id, c, stream_kind::done);
            e.finish_reason = ev.finish_reason;
            self->send(c.sink, std::move(e));
            self->demonitor(c.sink);
            self->state.clients.erase(it);
          }
        }
      },
      [=](shutdown_atom) {
        std::vector<uint64_t> ids;
        for (auto& [id, c] : self->state.clients) ids.push_back(id);
        for (uint64_t id : ids) finish_with_error(self, id, to_string(errc::cancelled), "the runtime is shutting down");
        self->quit();
      },
      [=](stats_atom) { return static_cast<uint64_t>(self->state.clients.size()); },
  };
}

}  // namespace fw::actors
