#include "actors/node_service_actor.hpp"

#include <caf/all.hpp>

#include <chrono>

#include "actors/node_seal.hpp"
#include "actors/protocol/errc_error.hpp"
#include "runtime/base/log.hpp"
#include "runtime/device/prefill.hpp"
#include "runtime/kv/kv_stream_writer.hpp"
#include "runtime/net/link_auth.hpp"

namespace fw::actors {

std::string refuse_hello(const node_hello& mine, const node_hello& theirs) {
  if (theirs.protocol != mine.protocol)
    return "node protocol: " + theirs.identity.name + " speaks version " + std::to_string(theirs.protocol) + ", " +
           mine.identity.name + " speaks version " + std::to_string(mine.protocol);
  const pair_verdict v = check_pair(mine.identity, theirs.identity);
  std::string out;
  for (const auto& m : v.mismatches) out += (out.empty() ? "" : "; ") + m;
  return out;
}

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

namespace {

/// Prefills a job into the node's pool, streams its KV to the service in chunks and releases
/// it (detached: the forward passes block its own thread).
node_prefill_worker::behavior_type prefill_encoder(node_prefill_worker::pointer self, node_service_config cfg) {
  return {
      [self, cfg](prefill_atom, remote_prefill_job& job) {
        remote_prefill_done r;
        r.id = job.id;
        if (job.wire > static_cast<uint8_t>(kv_wire::int8)) {
          r.error = "unknown KV wire " + std::to_string(job.wire);
          return r;
        }
        kv_block_pool& pool = cfg.device->kv_pool();
        auto kv = pool.allocate(static_cast<uint32_t>(job.tokens.size()));
        if (!kv) {
          r.error = "the prefill node's KV pool is full";
          return r;
        }
        if (cfg.before_prefill) cfg.before_prefill(job.id);
        const auto t0 = std::chrono::steady_clock::now();
        forward_result out;
        auto ok = prefill_tokens(*cfg.device, *kv, job.tokens.data(), job.tokens.size(), 0, cfg.prefill_chunk, out);
        r.prefill_ms = ms_since(t0);
        if (!out.entropy.empty() && !job.tokens.empty()) r.attention_entropy = out.entropy.back();
        const auto t1 = std::chrono::steady_clock::now();
        if (!ok) {
          r.error = ok.err().message;
        } else if (auto w = kv_stream_writer::open(pool, *kv, static_cast<kv_wire>(job.wire)); !w) {
          r.error = w.err().message;
        } else {
          // The service forwards each chunk as it comes: the first are on the network while the
          // rest are encoded.
          auto service = caf::actor_cast<node_chunk_sink>(self->current_sender());
          const size_t step = std::max<uint32_t>(job.chunk_bytes, 4096);
          while (!w->done()) {
            kv_chunk c{job.id, r.chunks++, std::string(std::min<uint64_t>(step, w->size() - w->written()), '\0'), {}};
            w->read(reinterpret_cast<std::byte*>(c.bytes.data()), c.bytes.size());
            self->send(service, chunk_atom::value, std::move(c));
          }
          r.bytes = w->size();
          r.payload_crc = w->payload_crc();
        }
        if (auto rel = pool.release(*kv); !rel) log_warn("prefill node: releasing a prefill's KV: " + rel.err().message);
        r.encode_ms = ms_since(t1);
        return r;
      },
  };
}

}  // namespace

node_service_actor::behavior_type node_service(node_service_actor::stateful_pointer<node_service_state> self,
                                               node_service_config cfg) {
  self->state.worker = self->spawn<caf::detached + caf::linked>(prefill_encoder, cfg);
  auto* counters = cfg.counters;
  auto count = [counters](std::atomic<uint64_t> node_service_counters::*c, uint64_t n = 1) {
    if (counters) (counters->*c) += n;
  };
  node_hello mine{cfg.protocol, "prefill", cfg.identity, {}, {}};
  const auto peer_of = [self] { return self->current_sender() ? to_string(self->current_sender()->node()) : "?"; };
  return {
      [=](hello_atom, node_hello& theirs) -> node_hello {
        // Both sides judge the same two hellos (refuse_hello): the reply is always this node's
        // own, so the peer can name the mismatch; only an accepted peer may send prompts.
        count(&node_service_counters::hellos);
        const std::string peer = peer_of();
        auto& st = self->state;
        st.accepted.erase(peer);  // a new handshake replaces whatever the last one passed
        st.sessions.erase(peer);
        st.challenges.erase(peer);
        if (const std::string why = refuse_hello(mine, theirs); !why.empty()) {
          count(&node_service_counters::refused);
          log_warn("prefill node: refused " + theirs.identity.name + " (" + peer + "): " + why);
          return mine;
        }
        if (cfg.secret.empty()) {
          st.accepted.insert(peer);
          log_info("prefill node: " + theirs.identity.name + " connected (" + peer + ")");
          return mine;
        }
        // The challenge: this node's proof over both nonces, and its own fresh nonce for the
        // peer's proof (auth_atom). Half-open handshakes are capped.
        node_hello reply = mine;
        reply.nonce = make_nonce();
        if (theirs.nonce.size() < 16) {
          count(&node_service_counters::refused);
          log_warn("prefill node: refused " + theirs.identity.name + " (" + peer + "): its hello has no nonce");
          return reply;
        }
        reply.proof = link_proof(cfg.secret, "prefill", theirs.nonce, reply.nonce);
        if (st.challenges.size() >= 256) st.challenges.erase(st.challenges.begin());
        st.challenges[peer] = {theirs.nonce, reply.nonce};
        return reply;
      },
      [=](auth_atom, node_proof& p) -> std::string {
        const std::string peer = peer_of();
        auto& st = self->state;
        auto refuse = [&](const std::string& why) {
          count(&node_service_counters::refused);
          log_warn("prefill node: refused " + peer + ": " + why);
          return why;
        };
        if (cfg.secret.empty()) return refuse("this prefill node has no secret to prove");
        auto it = st.challenges.find(peer);
        if (it == st.challenges.end()) return refuse("no handshake of this node is waiting for a proof (send hello first)");
        const auto c = std::move(it->second);
        st.challenges.erase(it);  // one proof per challenge: a replayed or guessed one meets a new nonce
        if (!same_tag(p.proof, link_proof(cfg.secret, "decode", c.decode_nonce, c.prefill_nonce)))
          return refuse("the proof of the shared secret is wrong (another secret_file?)");
        st.sessions[peer] = {link_session_key(cfg.secret, c.decode_nonce, c.prefill_nonce), 0};
        st.accepted.insert(peer);
        log_info("prefill node: " + peer + " connected (proved the shared secret)");
        return std::string();
      },
      [=](ping_atom) { return ok_atom::value; },
      [=](chunk_atom, kv_chunk& c) {
        if (caf::actor_cast<caf::actor_addr>(self->current_sender()) != self->state.worker.address()) return;  // only its own worker's
        auto it = self->state.out.find(c.id);
        if (it == self->state.out.end()) return;
        c.id = it->second.id;
        c.seal = seal_of(it->second.key, c);
        if (cfg.tamper_chunk) cfg.tamper_chunk(c);
        self->send(it->second.dest, chunk_atom::value, std::move(c));
      },
      [=](prefill_atom, remote_prefill_job& job) -> caf::result<remote_prefill_done> {
        auto sender = self->current_sender();
        const std::string peer = peer_of();
        remote_prefill_done refused;
        refused.id = job.id;
        if (!sender || !self->state.accepted.count(peer)) {
          count(&node_service_counters::failed);
          refused.error = "this node did not pass the handshake (send hello first)";
          return refused;
        }
        std::string key;
        if (!cfg.secret.empty()) {
          auto& session = self->state.sessions[peer];
          if (!sealed_by(session.key, job) || job.id <= session.last_job) {
            count(&node_service_counters::forged);
            log_warn("prefill node: refused a job from " + peer + ": its seal is wrong or it was sent before");
            refused.error = "the job's seal is wrong or it was sent before";
            return refused;
          }
          session.last_job = job.id;
          key = session.key;
        }
        // The worker prefills and streams; this actor stays free for hellos and heartbeats, and
        // forwards the chunks (the worker never talks to another node).
        auto promise = self->make_response_promise<remote_prefill_done>();
        const uint64_t theirs = job.id, mine = ++self->state.next_job;
        self->state.out[mine] = {caf::actor_cast<node_chunk_sink>(sender), theirs, key};
        job.id = mine;
        self->request(self->state.worker, caf::infinite, prefill_atom::value, std::move(job))
            .then([=](remote_prefill_done& r) mutable {
              self->state.out.erase(mine);
              r.id = theirs;
              r.seal = seal_of(key, r);
              if (r.error.empty()) {
                count(&node_service_counters::prefills);
                count(&node_service_counters::bytes, r.bytes);
              } else {
                count(&node_service_counters::failed);
              }
              promise.deliver(std::move(r));
            });
        return promise;
      },
  };
}

}  // namespace fw::actors
