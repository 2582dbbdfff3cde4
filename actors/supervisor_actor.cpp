#include "actors/supervisor_actor.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <cstdio>

#include "actors/decode_actor.hpp"
#include "actors/draft_actor.hpp"
#include "actors/node_link_actor.hpp"
#include "actors/prefill_actor.hpp"
#include "actors/transfer_actor.hpp"
#include "runtime/base/log.hpp"

namespace fw::actors {
namespace {

using self_ptr = supervisor_actor::stateful_pointer<supervisor_state>;

constexpr const char* kind_names[supervisor_state::kinds] = {"prefill", "fallback", "transfer", "decode", "offload",
                                                             "draft"};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

size_t index(worker_kind k) { return static_cast<size_t>(k); }

/// Spawns the worker of kind k and hands it to the scheduler; why is empty at start.
void start(self_ptr self, const engine_context* ctx, worker_kind k, const std::string& why) {
  auto& st = self->state;
  auto& sys = self->system();
  st.down[index(k)] = false;
  switch (k) {
    case worker_kind::prefill:
      if (ctx->networked()) st.prefill = sys.spawn(node_link, ctx);  // remote prefill nodes (its helpers are detached)
      else st.prefill = sys.spawn<caf::detached>(prefill_worker, ctx, ctx->prefill_device(), false);
      self->monitor(st.prefill);
      self->send(st.scheduler, worker_atom::value, st.prefill, why);
      break;
    case worker_kind::fallback:
      st.fallback = sys.spawn<caf::detached>(prefill_worker, ctx, ctx->device(), true);
      self->monitor(st.fallback);
      self->send(st.scheduler, fallback_atom::value, st.fallback, why);
      break;
    case worker_kind::transfer:
      st.transfer = sys.spawn<caf::detached>(transfer_worker, ctx);
      self->monitor(st.transfer);
      self->send(st.scheduler, worker_atom::value, st.transfer, why);
      break;
    case worker_kind::decode:
      st.decode = sys.spawn<caf::detached>(decode_worker, ctx, st.front_door, st.scheduler, ctx->device(), false);
      self->monitor(st.decode);
      self->send(st.scheduler, worker_atom::value, st.decode, why);
      if (st.degradation.state() != degradation_state::healthy)  // a replacement keeps the cap
        self->send(st.decode, degrade_atom::value, static_cast<int32_t>(st.degradation.limits().k_cap));
      if (st.draft) self->send(st.decode, draft_atom::value, st.draft);
      break;
    case worker_kind::draft:
      st.draft = sys.spawn<caf::detached>(draft_worker, ctx);
      self->monitor(st.draft);
      if (st.decode) self->send(st.decode, draft_atom::value, st.draft);
      break;
    case worker_kind::offload:
      st.offload = sys.spawn<caf::detached>(decode_worker, ctx, st.front_door, st.scheduler, ctx->offload_device(), true);
      self->monitor(st.offload);
      self->send(st.scheduler, offload_atom::value, st.offload, why);
      break;
  }
}

/// Which worker an exit came from (forgetting its handle); false: none of ours.
bool which(supervisor_state& st, const caf::actor_addr& src, worker_kind& out) {
  auto is = [&](auto& handle, worker_kind k) {
    if (!handle || handle.address() != src) return false;
    handle = std::decay_t<decltype(handle)>{};
    out = k;
    return true;
  };
  return is(st.decode, worker_kind::decode) || is(st.prefill, worker_kind::prefill) ||
         is(st.fallback, worker_kind::fallback) || is(st.offload, worker_kind::offload) ||
         is(st.transfer, worker_kind::transfer) || is(st.draft, worker_kind::draft);
}

/// One moment of telemetry: the policy decides, and a change is applied and logged.
void observe(self_ptr self, std::vector<telemetry_sample>& samples) {
  auto& st = self->state;
  if (!st.degradation.observe(samples)) return;
  const auto& t = st.degradation.transitions().back();
  log_warn(std::string("supervisor: ") + to_string(t.from) + " -> " + to_string(t.to) + ": " + t.reason);
  self->send(st.scheduler, degrade_atom::value, static_cast<uint8_t>(t.to), t.reason);
  const int32_t cap = t.to == degradation_state::healthy ? -1 : st.degradation.limits().k_cap;
  if (st.decode) self->send(st.decode, degrade_atom::value, cap);
}

std::string describe(const degradation_transition& t, double t0) {
  char when[32];
  std::snprintf(when, sizeof when, "t=%.1fs", t.t_s - t0);
  return std::string(when) + " " + to_string(t.from) + " -> " + to_string(t.to) + ": " + t.reason;
}

}  // namespace

supervisor_actor::behavior_type supervisor(self_ptr self, const engine_context* ctx, front_door_actor front_door,
                                           scheduler_actor scheduler) {
  self->state.front_door = std::move(front_door);
  self->state.scheduler = std::move(scheduler);
  for (auto& p : self->state.policies) p = restart_policy(ctx->limits.restart);
  self->state.degradation = degradation_policy(ctx->limits.degradation);
  self->state.started_s = now_s();
  self->state.telemetry = "no telemetry polled ([supervisor] telemetry_poll_ms = 0); drills only";
  if (ctx->limits.telemetry_poll_s > 0) {
    self->state.thermal = std::make_unique<thermal_source>();
    self->state.telemetry = self->state.thermal->describe();
    // An absent CPU sensor is not news at start-up ([logging] level = "debug" shows it; :devices too).
    if (!self->state.thermal->available()) log_debug("supervisor: " + self->state.telemetry);
    for (const auto& f : ctx->limits.telemetry_feeds) self->state.telemetry += "; " + f->describe();
    self->state.feed_failing.assign(ctx->limits.telemetry_feeds.size(), false);
    if (self->state.thermal->available() || !ctx->limits.telemetry_feeds.empty()) self->send(self, tick_atom::value);
  }
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.stopping) return;
    worker_kind k;
    if (!which(st, dm.source, k)) return;
    std::string reason = self->system().render(dm.reason);
    if (reason.empty() || reason == "none") reason = "exited";
    const size_t i = index(k);
    st.last_reason[i] = reason;
    // The scheduler re-admits what the worker held now, not after the backoff (a draft actor holds
    // nothing of the scheduler's: its decode worker decodes plainly meanwhile).
    if (k != worker_kind::draft) self->send(st.scheduler, lost_atom::value, static_cast<uint8_t>(k), reason);
    const restart_decision d = st.policies[i].crashed(now_s());
    if (d.escalate) {
      st.down[i] = true;
      log_warn(std::string("supervisor: the ") + kind_names[i] + " worker died " + std::to_string(d.recent) +
               " times within " + std::to_string(static_cast<int>(st.policies[i].limits().window_s)) +
               " s; its device is marked down for " + std::to_string(d.delay_s) + " s (last: " + reason + ")");
    }
    const auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(d.delay_s));
    if (delay.count() <= 0) self->send(self, worker_atom::value, static_cast<uint8_t>(k));
    else self->delayed_send(self, delay, worker_atom::value, static_cast<uint8_t>(k));
  });
  return {
      [=](init_atom) {
        start(self, ctx, worker_kind::prefill, "");
        if (ctx->physical()) start(self, ctx, worker_kind::fallback, "");
        if (ctx->transfers()) start(self, ctx, worker_kind::transfer, "");
        if (ctx->offload_device()) start(self, ctx, worker_kind::offload, "");
        if (ctx->limits.draft) start(self, ctx, worker_kind::draft, "");
        start(self, ctx, worker_kind::decode, "");
        return ok_atom::value;
      },
      [=](worker_atom, uint8_t kind) {
        auto& st = self->state;
        if (st.stopping || kind >= supervisor_state::kinds) return;
        ++st.restarts;
        start(self, ctx, static_cast<worker_kind>(kind), st.last_reason[kind]);
      },
      [=](stats_atom) { return self->state.restarts; },
      [=](tick_atom) {
        auto& st = self->state;
        if (st.stopping || !st.thermal) return;
        const double t = now_s() - st.started_s;  // seconds since start
        std::vector<telemetry_sample> samples;
        if (st.thermal->available()) samples = st.thermal->sample(t);
        const auto& feeds = ctx->limits.telemetry_feeds;
        for (size_t i = 0; i < feeds.size(); ++i) {
          auto got = feeds[i]->sample(t);
          if (!got) {  // logged when it starts failing and when it is back; polled again next tick
            if (!st.feed_failing[i]) log_warn("supervisor: telemetry " + feeds[i]->describe() + ": " + got.err().message);
            st.feed_failing[i] = true;
            continue;
          }
          if (st.feed_failing[i]) log_info("supervisor: telemetry " + feeds[i]->describe() + " reads again");
          st.feed_failing[i] = false;
          samples.insert(samples.end(), got->begin(), got->end());
        }
        if (!samples.empty()) observe(self, samples);
        self->delayed_send(self, std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::duration<double>(ctx->limits.telemetry_poll_s)),
                           tick_atom::value);
      },
      [=](telemetry_atom, telemetry_moment& m) {
        if (!self->state.stopping) observe(self, m.samples);
      },
      [=](drill_atom, telemetry_drill& d) {
        // Each group of samples with one time is a moment, played at its offset / speed.
        const double speed = d.speed > 0 ? d.speed : 1.0;
        size_t i = 0;
        while (i < d.samples.size()) {
          telemetry_moment m;
          const double t = d.samples[i].t_s;
          while (i < d.samples.size() && d.samples[i].t_s == t) m.samples.push_back(d.samples[i++]);
          const auto delay = std::chrono::duration_cast<std::chrono::microseconds>(
              std::chrono::duration<double>((t - d.samples.front().t_s) / speed));
          if (delay.count() <= 0) self->send(self, telemetry_atom::value, std::move(m));
          else self->delayed_send(self, delay, telemetry_atom::value, std::move(m));
        }
        return ok_atom::value;
      },
      [=](health_atom) {
        auto& st = self->state;
        worker_health h;
        const bool present[supervisor_state::kinds] = {true, ctx->physical(), ctx->transfers(), true,
                                                       ctx->offload_device() != nullptr, ctx->limits.draft != nullptr};
        const bool running[supervisor_state::kinds] = {bool(st.prefill), bool(st.fallback), bool(st.transfer),
                                                       bool(st.decode), bool(st.offload), bool(st.draft)};
        for (size_t i = 0; i < supervisor_state::kinds; ++i) {
          if (!present[i]) continue;
          h.names.emplace_back(kind_names[i]);
          h.crashes.push_back(st.policies[i].crashes());
          h.escalations.push_back(st.policies[i].escalations());
          h.states.emplace_back(running[i] ? "running" : st.down[i] ? "down" : "restarting");
          h.last_reason.push_back(st.last_reason[i]);
        }
        const auto& dp = st.degradation;
        h.degradation = to_string(dp.state());
        h.degradation_reason = dp.last_reason();
        h.transitions_total = dp.transitions().size();
        const auto& tr = dp.transitions();
        for (size_t i = tr.size() > 16 ? tr.size() - 16 : 0; i < tr.size(); ++i) h.transitions.push_back(describe(tr[i], 0));
        for (const auto& [key, v] : dp.readings()) h.readings.push_back(telemetry_sample{0, key.first, key.second, v});
        h.telemetry = st.telemetry;
        return h;
      },
      [=](shutdown_atom) {
        auto& st = self->state;
        st.stopping = true;
        if (st.prefill) self->send_exit(st.prefill, caf::exit_reason::user_shutdown);
        if (st.decode) self->send_exit(st.decode, caf::exit_reason::user_shutdown);
        if (st.fallback) self->send_exit(st.fallback, caf::exit_reason::user_shutdown);
        if (st.transfer) self->send_exit(st.transfer, caf::exit_reason::user_shutdown);
        if (st.offload) self->send_exit(st.offload, caf::exit_reason::user_shutdown);
        if (st.draft) self->send_exit(st.draft, caf::exit_reason::user_shutdown);
        self->quit();
      },
  };
}

}  // namespace fw::actors
