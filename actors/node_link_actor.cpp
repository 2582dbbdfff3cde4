#include "actors/node_link_actor.hpp"

#include <caf/all.hpp>
#include "actors/node_network.hpp"
#include "actors/node_seal.hpp"
#include "actors/node_service_actor.hpp"
#include "actors/prefill_actor.hpp"
#include "actors/protocol/errc_error.hpp"
#include "runtime/base/log.hpp"
#include "runtime/kv/kv_stream_reader.hpp"
#include "runtime/net/link_auth.hpp"
#include "runtime/sched/peer_choice.hpp"

namespace fw::actors {
namespace {

using self_ptr = node_link_actor::stateful_pointer<node_link_state>;
using peer = node_link_state::peer;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::chrono::milliseconds ms(double s) {
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000 + 0.5));
}

class link_logic {
 public:
  link_logic(self_ptr self, const engine_context* ctx) : self_(self), ctx_(ctx), lim_(ctx->limits.nodes) {}

  void publish() {
    if (!ctx_->nodes) return;
    std::vector<peer_report> out;
    for (auto& p : st().peers) {
      p.report.state = p.state;
      out.push_back(p.report);
    }
    ctx_->nodes->publish(std::move(out), st().local_prefills);
  }

  caf::result<prefill_done> prefill(prefill_job& job) {
    std::vector<peer_view> views;
    for (const auto& p : st().peers)
      views.push_back({p.state == "connected", p.report.in_flight, p.report.prefills, p.queued_tokens, p.tokens_per_s});
    // The deadline counts the round trip too: keep a fifth of it for the network and the decode.
    // A prefix cached here goes too, as the tokens it stands for; KV that is not a cached prefix
    // (none reaches here today: the decode role does not slice prompts) keeps the prompt here.
    // A prompt being scored stays here too: a prefill node returns KV, not logprobs.
    const bool whole = job.kv.n_tokens == job.cached.size();
    const peer_pick pick = job.prompt_logprobs >= 0 ? peer_pick{-1, "its prompt is scored"}
                           : whole ? choose_peer(views, static_cast<uint32_t>(job.tokens.size()), job.kv.n_tokens,
                                                 lim_.min_remote_tokens, 0.8 * lim_.deadline_s)
                                   : peer_pick{-1, "its KV so far is not a cached prefix"};
    if (pick.peer < 0) {
      ++st().local_prefills;
      publish();
      return self_->delegate(st().local, prefill_atom::value, std::move(job));
    }
    if (job.kv.n_tokens > 0) {
      // The peer prefills it whole (it has no prefix cache: the shared part is computed again
      // there) and streams all of it: the cached copy's rows count for nothing (its blocks stay,
      // for the stream to fill), and a fail-over prefills it whole here.
      job.tokens.insert(job.tokens.begin(), job.cached.begin(), job.cached.end());
      job.cached.clear();
      (void)ctx_->device()->kv_pool().set_length(job.kv, 0);
    }
    const uint64_t rid = ++st().next_id;
    auto& p = st().peers[pick.peer];
    remote_prefill_job rj{rid, job.tokens, static_cast<uint8_t>(ctx_->limits.kv_transfer), lim_.chunk_bytes, {}};
    rj.seal = seal_of(p.key, rj);
    node_link_state::pending pend;
    pend.job = std::move(job);
    pend.promise = self_->make_response_promise<prefill_done>();
    pend.peer = static_cast<size_t>(pick.peer);
    pend.sent = std::chrono::steady_clock::now();
    auto promise = pend.promise;
    st().in_flight.emplace(rid, std::move(pend));
    ++p.report.in_flight;
    p.queued_tokens += rj.tokens.size();
    publish();
    auto* self = self_;
    const auto* ctx = ctx_;
    self_->request(p.service, ms(lim_.deadline_s), prefill_atom::value, std::move(rj))
        .then([self, ctx](remote_prefill_done& d) { link_logic(self, ctx).remote_done(d); },
              [self, ctx, rid](caf::error& err) {
                link_logic l(self, ctx);
                l.fail_over(rid, "the prefill node did not finish (" + from_caf_error(err).message + ")");
              });
    return promise;
  }

  /// A piece of a request's stream: straight to the decoder, which writes it into the pool
  /// while the rest is on the way.
  void chunk(kv_chunk& c) {
    auto it = st().in_flight.find(c.id);
    if (it == st().in_flight.end()) return;  // redone here already
    auto& p = it->second;
    if (p.aborting || p.finishing || p.out_of_order) return;
    auto& from = st().peers[p.peer];
    if (caf::actor_cast<caf::actor_addr>(self_->current_sender()) != from.service.address() || !sealed_by(from.key, c)) {
      // Dropped: the real chunk still comes (or the stream ends short and fails over).
      if (from.report.forged++ % 64 == 0)
        log_warn("node link: dropped a KV chunk of request " + std::to_string(c.id) + " that is not " + from.address.text() +
                 "'s or whose seal is wrong (" + std::to_string(from.report.forged) + " so far)");
      publish();
      return;
    }
    if (c.seq != p.next_seq++) {
      p.out_of_order = true;  // the reply fails it over
      return;
    }
    if (ctx_->faults && ctx_->faults->damage_kv_stream) {
      std::vector<std::byte> tmp(reinterpret_cast<const std::byte*>(c.bytes.data()),
                                 reinterpret_cast<const std::byte*>(c.bytes.data()) + c.bytes.size());
      ctx_->faults->damage_kv_stream(p.job.id, tmp);
      c.bytes.assign(reinterpret_cast<const char*>(tmp.data()), tmp.size());
    }
    p.received += c.bytes.size();
    kv_stream_part part{c.id, std::move(c.bytes), !p.decoding, {}};
    if (!p.decoding) {
      part.kv = std::move(p.job.kv);
      p.job.kv = {};
      p.decoding = true;
    }
    self_->send(st().decoder, transfer_atom::value, std::move(part));
  }

  /// The prefill node's reply, after its last chunk: the decoder checks the stream's length and
  /// checksum and hands the KV back.
  void remote_done(remote_prefill_done& d) {
    auto it = st().in_flight.find(d.id);
    if (it == st().in_flight.end()) return;
    auto& p = it->second;
    auto& from = st().peers[p.peer];
    if (!sealed_by(from.key, d)) {
      if (!d.error.empty()) return fail_over(d.id, "the prefill node refused it: " + d.error);
      ++from.report.forged;
      return fail_over(d.id, "the prefill node's reply is not sealed with the session's key");
    }
    if (!d.error.empty()) return fail_over(d.id, "the prefill node failed: " + d.error);
    if (p.out_of_order || d.chunks != p.next_seq || d.bytes != p.received || !p.decoding)
      return fail_over(d.id, "the KV stream arrived incomplete (" + std::to_string(p.received) + " of " +
                                 std::to_string(d.bytes) + " bytes, " + std::to_string(p.next_seq) + " of " +
                                 std::to_string(d.chunks) + " chunks" + (p.out_of_order ? ", out of order" : "") + ")");
    p.finishing = true;
    p.finish_sent = std::chrono::steady_clock::now();
    auto* self = self_;
    const auto* ctx = ctx_;
    const uint64_t rid = d.id;
    self_->request(st().decoder, caf::infinite, transfer_atom::value, kv_stream_end{rid, d.payload_crc, false})
        .then([self, ctx, d](kv_stream_done& r) { link_logic(self, ctx).decoded(d, r); },
              [self, rid](caf::error& err) { decoder_failed(self, rid, err); });
  }

  /// The decoder died with a request's KV handle: the supervisor restarts this link with it,
  /// and the scheduler re-admits what it held.
  static void decoder_failed(self_ptr self, uint64_t rid, const caf::error& err) {
    log_warn("node link: the KV decoder failed on request " + std::to_string(rid) + ": " + from_caf_error(err).message);
    give_up(self);
    self->quit(caf::exit_reason::unhandled_exception);
  }

  /// This link is about to stop (a linked helper died): every remote prefill it still holds is
  /// answered "receiver down", so the scheduler re-admits it at once as a request whose worker
  /// died for another's (a promise dropped unanswered would leave its request waiting forever).
  static void give_up(self_ptr self) {
    auto pending = std::move(self->state.in_flight);
    self->state.in_flight.clear();
    for (auto& [rid, p] : pending) p.promise.deliver(caf::make_error(caf::sec::request_receiver_down));
  }

  /// The decoder is back with the request's KV.
  void decoded(const remote_prefill_done& d, kv_stream_done& r) {
    auto it = st().in_flight.find(d.id);
    if (it == st().in_flight.end()) return;
    auto& p = it->second;
    p.job.kv = std::move(r.kv);
    p.decoding = p.finishing = false;
    if (!r.error.empty()) return fail_over(d.id, "its KV stream was refused: " + r.error);
    if (p.job.kv.n_tokens != p.job.tokens.size()) {
      const uint32_t got = p.job.kv.n_tokens;
      (void)ctx_->device()->kv_pool().set_length(p.job.kv, 0);  // its rows count for nothing
      return fail_over(d.id, "its KV stream holds " + std::to_string(got) + " tokens, the prompt " +
                                 std::to_string(p.job.tokens.size()));
    }
    auto& peer = st().peers[p.peer];
    const auto now = std::chrono::steady_clock::now();
    const double round_s = std::chrono::duration<double>(now - p.sent).count();
    settle(peer, p.job.tokens.size());
    if (d.prefill_ms > 0) {
      const double rate = p.job.tokens.size() / (d.prefill_ms / 1000);
      peer.tokens_per_s = peer.tokens_per_s > 0 ? 0.8 * peer.tokens_per_s + 0.2 * rate : rate;
    }
    ++peer.report.prefills;
    peer.report.bytes += d.bytes;
    peer.report.prefill_s += d.prefill_ms / 1000;
    peer.report.transfer_s += std::max(0.0, round_s - d.prefill_ms / 1000);
    peer.report.encode_s += d.encode_ms / 1000;
    peer.report.decode_s += std::chrono::duration<double>(now - p.finish_sent).count();
    prefill_done out;
    out.id = p.job.id;
    out.kv = std::move(p.job.kv);
    out.ms = d.prefill_ms;
    out.attention_entropy = d.attention_entropy;
    out.done_s = now_s();
    auto promise = p.promise;
    st().in_flight.erase(it);
    publish();
    promise.deliver(std::move(out));
  }

  /// One of the peer's prefills is no longer in flight.
  static void settle(peer& p, size_t tokens) {
    if (p.report.in_flight > 0) --p.report.in_flight;
    p.queued_tokens -= std::min<uint64_t>(p.queued_tokens, tokens);
  }

  /// A remote prefill that will not come back in time, or whose stream is refused: its prompt is
  /// prefilled here. A stream the decoder has open is closed first (its KV comes back); one
  /// whose end is with the decoder settles by itself.
  void fail_over(uint64_t rid, const std::string& why) {
    auto it = st().in_flight.find(rid);
    if (it == st().in_flight.end() || it->second.finishing || it->second.aborting) return;
    if (it->second.decoding) {
      it->second.aborting = true;
      auto* self = self_;
      const auto* ctx = ctx_;
      self_->request(st().decoder, caf::infinite, transfer_atom::value, kv_stream_end{rid, 0, true})
          .then(
              [self, ctx, rid, why](kv_stream_done& r) {
                link_logic l(self, ctx);
                auto at = l.st().in_flight.find(rid);
                if (at == l.st().in_flight.end()) return;
                at->second.job.kv = std::move(r.kv);
                at->second.decoding = at->second.aborting = false;
                l.redo(rid, why);
              },
              [self, rid](caf::error& err) { decoder_failed(self, rid, err); });
      return;
    }
    redo(rid, why);
  }

  void redo(uint64_t rid, const std::string& why) {
    auto it = st().in_flight.find(rid);
    if (it == st().in_flight.end()) return;
    auto p = std::move(it->second);
    st().in_flight.erase(it);
    auto& peer = st().peers[p.peer];
    settle(peer, p.job.tokens.size());
    ++peer.report.failovers;
    ++st().local_prefills;
    log_warn("node link: request " + std::to_string(p.job.id) + " on " + peer.address.text() + ": " + why +
             "; prefilling it here");
    publish();
    p.promise.delegate(st().local, prefill_atom::value, std::move(p.job));
  }

  /// The peer's connection ended or its heartbeat went unanswered.
  void lost(size_t i, const std::string& why) {
    auto& p = st().peers[i];
    if (p.state != "connected") return;
    if (p.service) self_->demonitor(p.service.address());
    p.service = node_service_actor{};
    p.key.clear();
    p.state = "down";
    p.tokens_per_s = 0;  // a replacement may run at another rate
    p.report.reason = why;
    p.ping_pending = false;
    ++p.epoch;
    p.next_try_s = now_s() + reconnect_delay_s(p.failures++, lim_.reconnect_s, lim_.reconnect_max_s);
    log_warn("node link: prefill node " + p.address.text() + " lost: " + why + "; prompts are prefilled here");
    std::vector<uint64_t> mine;
    for (const auto& [rid, pend] : st().in_flight)
      if (pend.peer == i && !pend.finishing && !pend.aborting) mine.push_back(rid);
    for (uint64_t rid : mine) fail_over(rid, "the prefill node was lost (" + why + ")");
    publish();
  }

  void connect(size_t i) {
    auto& p = st().peers[i];
    // The first attempt shows "connecting"; a retry keeps "down" or "refused" and its reason until it
    // connects, so a peer that stays unreachable reads as down however often it is retried.
    if (p.report.reason.empty()) p.state = "connecting";
    p.trying = true;
    const uint64_t epoch = ++p.epoch;
    auto* self = self_;
    const auto* ctx = ctx_;
    auto failed = [self, ctx, i, epoch](const std::string& why, bool refused) {
      link_logic l(self, ctx);
      auto& q = l.st().peers[i];
      if (q.epoch != epoch) return;
      if (q.state != "refused" || !refused || q.report.reason != why)
        (refused ? log_warn : log_info)("node link: prefill node " + q.address.text() + (refused ? " refused: " : " not reachable: ") + why);
      q.state = refused ? "refused" : "down";
      q.trying = false;
      q.report.reason = why;
      q.service = node_service_actor{};
      q.key.clear();
      q.next_try_s = now_s() + reconnect_delay_s(q.failures++, l.lim_.reconnect_s, l.lim_.reconnect_max_s);
      l.publish();
    };
    auto mm = node_connector(self_->system());
    self_->request(mm, ms(lim_.heartbeat_timeout_s), caf::connect_atom::value, p.address.host, p.address.port)
        .then(
            [self, ctx, i, epoch, failed](caf::node_id&, caf::strong_actor_ptr& ptr, std::set<std::string>&) {
              if (!ptr) return failed("nothing is published on that port", false);
              auto svc = caf::actor_cast<node_service_actor>(ptr);
              link_logic l(self, ctx);
              node_hello mine = l.st().hello;
              mine.nonce = make_nonce();  // fresh per handshake: the peer's proof must be new
              self->request(svc, ms(l.lim_.heartbeat_timeout_s), hello_atom::value, mine)
                  .then(
                      [self, ctx, i, epoch, svc, failed, mine](node_hello& theirs) {
                        link_logic l2(self, ctx);
                        auto& q = l2.st().peers[i];
                        if (q.epoch != epoch) return;
                        if (const std::string why = refuse_hello(mine, theirs); !why.empty()) return failed(why, true);
                        const std::string& secret = l2.lim_.secret;
                        if (secret.empty() && theirs.proof.empty()) return l2.connected(i, svc, theirs, {});
                        if (secret.empty())
                          return failed("the prefill node requires the nodes' shared secret ([node] secret_file or "
                                        "FLYWHEEL_NODE_SECRET); this node has none",
                                        true);
                        if (theirs.proof.empty())
                          return failed("the prefill node has no shared secret; this node requires one", true);
                        if (!same_tag(theirs.proof, link_proof(secret, "prefill", mine.nonce, theirs.nonce)))
                          return failed("the prefill node did not prove the shared secret (another secret_file?)", true);
                        const std::string key = link_session_key(secret, mine.nonce, theirs.nonce);
                        self->request(svc, ms(l2.lim_.heartbeat_timeout_s), auth_atom::value,
                                      node_proof{link_proof(secret, "decode", mine.nonce, theirs.nonce)})
                            .then(
                                [self, ctx, i, epoch, svc, failed, theirs, key](std::string& refusal) {
                                  link_logic l3(self, ctx);
                                  if (l3.st().peers[i].epoch != epoch) return;
                                  if (!refusal.empty()) return failed("the prefill node refused this node's proof: " + refusal, true);
                                  l3.connected(i, svc, theirs, key);
                                },
                                [failed](caf::error& err) {
                                  failed("the proof of the shared secret went unanswered (" + from_caf_error(err).message + ")", true);
                                });
                      },
                      [failed](caf::error& err) {
                        failed("the handshake failed (" + from_caf_error(err).message +
                                   "): is it a flywheel prefill node of node protocol " +
                                   std::to_string(node_protocol_version) + "?",
                               true);
                      });
            },
            [self, failed](caf::error& err) {
              failed(connect_failure(self->system(), err, from_caf_error(err).message), false);
            });
    publish();
  }

  /// The handshake passed (and with a secret, both proofs): prompts may go to peer i.
  void connected(size_t i, const node_service_actor& svc, const node_hello& theirs, std::string key) {
    auto& q = st().peers[i];
    q.service = svc;
    q.key = std::move(key);
    q.state = "connected";
    q.trying = false;
    q.failures = 0;
    q.report.reason.clear();
    q.report.name = theirs.identity.name;
    ++q.report.connects;
    self_->monitor(svc);
    log_info("node link: prefill node " + q.address.text() + " connected (" + theirs.identity.name +
             (q.key.empty() ? ")" : ", proved the shared secret)"));
    publish();
  }

  void tick() {
    const double now = now_s();
    auto* self = self_;
    const auto* ctx = ctx_;
    for (size_t i = 0; i < st().peers.size(); ++i) {
      auto& p = st().peers[i];
      if (p.state == "connected" && !p.ping_pending) {
        p.ping_pending = true;
        const uint64_t epoch = p.epoch;
        self_->request(p.service, ms(lim_.heartbeat_timeout_s), ping_atom::value)
            .then(
                [self, ctx, i, epoch](ok_atom) {
                  auto& q = link_logic(self, ctx).st().peers[i];
                  if (q.epoch == epoch) q.ping_pending = false;
                },
                [self, ctx, i, epoch](caf::error& err) {
                  link_logic l(self, ctx);
                  if (l.st().peers[i].epoch == epoch)
                    l.lost(i, "heartbeat unanswered (" + from_caf_error(err).message + ")");
                });
      } else if ((p.state == "down" || p.state == "refused") && !p.trying && now >= p.next_try_s) {
        connect(i);
      }
    }
    self_->delayed_send(self_, ms(lim_.heartbeat_s), tick_atom::value);
  }

  node_link_state& st() { return self_->state; }

 private:
  self_ptr self_;
  const engine_context* ctx_;
  const node_limits& lim_;
};

}  // namespace

node_link_actor::behavior_type node_link(self_ptr self, const engine_context* ctx) {
  auto& st = self->state;
  st.hello = node_hello{node_protocol_version, "decode", ctx->limits.nodes.self, {}, {}};
  st.local = self->spawn<caf::detached + caf::linked>(prefill_worker, ctx, ctx->device(), false);
  st.decoder = self->spawn<caf::detached + caf::linked>([ctx]() -> kv_stream_decoder::behavior_type {
    auto open = std::make_shared<std::unordered_map<uint64_t, kv_stream_reader>>();
    return {
        [ctx, open](transfer_atom, kv_stream_part& part) {
          auto it = open->find(part.id);
          if (it == open->end()) {
            if (!part.first) return;
            it = open->emplace(part.id, kv_stream_reader(ctx->device()->kv_pool(), std::move(part.kv))).first;
          }
          // An error sticks in the reader and is the verdict at the end.
          (void)it->second.feed(std::span<const std::byte>(reinterpret_cast<const std::byte*>(part.bytes.data()),
                                                            part.bytes.size()));
        },
        [open](transfer_atom, kv_stream_end& e) {
          kv_stream_done r;
          r.id = e.id;
          auto it = open->find(e.id);
          if (it == open->end()) {
            r.error = "no stream is open for request " + std::to_string(e.id);
            return r;
          }
          if (!e.abort)
            if (auto ok = it->second.finish(e.payload_crc); !ok) r.error = ok.err().message;
          r.kv = it->second.take();
          open->erase(it);
          return r;
        },
    };
  });
  for (const auto& a : ctx->limits.nodes.peers) {
    node_link_state::peer p;
    p.address = a;
    p.report.address = a.text();
    st.peers.push_back(std::move(p));
  }
  self->set_down_handler([self, ctx](caf::down_msg& dm) {
    link_logic l(self, ctx);
    for (size_t i = 0; i < l.st().peers.size(); ++i)
      if (l.st().peers[i].service && l.st().peers[i].service.address() == dm.source)
        l.lost(i, "connection lost (" + self->system().render(dm.reason) + ")");
  });
  // A linked helper (the local prefill worker, the KV decoder) died: answer what is in flight
  // before stopping with it (the default would stop without a word to the scheduler).
  self->set_exit_handler([self](caf::exit_msg& m) {
    if (m.reason == caf::exit_reason::normal) return;  // as by default: a normal exit does not spread
    link_logic::give_up(self);
    self->quit(m.reason);
  });
  link_logic(self, ctx).tick();  // connects to every peer now
  return {
      [=](prefill_atom, prefill_job& job) -> caf::result<prefill_done> { return link_logic(self, ctx).prefill(job); },
      [=](chunk_atom, kv_chunk& c) { link_logic(self, ctx).chunk(c); },
      [=](tick_atom) { link_logic(self, ctx).tick(); },
  };
}

}  // namespace fw::actors
