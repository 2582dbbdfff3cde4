#include "actors/node_service_actor.hpp"

#include <caf/all.hpp>

#include <chrono>

#include "actors/protocol/errc_error.hpp"
#include "runtime/base/log.hpp"
#include "runtime/device/prefill.hpp"
#include "runtime/kv/kv_stream_writer.hpp"

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
            kv_chunk c{job.id, r.chunks++, std::string(std::min<uint64_t>(step, w->size() - w->written()), '\0')};
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
  node_hello mine{cfg.protocol, "prefill", cfg.identity};
  return {
      [=](hello_atom, node_hello& theirs) -> node_hello {
        // Both sides judge the same two hellos (refuse_hello): the reply is always this node's
        // own, so the peer can name the mismatch; only an accepted peer may send prompts.
        count(&node_service_counters::hellos);
        const std::string peer = self->current_sender() ? to_string(self->current_sender()->node()) : "?";
        if (const std::string why = refuse_hello(mine, theirs); !why.empty()) {
          count(&node_service_counters::refused);
          log_warn("prefill node: refused " + theirs.identity.name + " (" + peer + "): " + why);
          return mine;
        }
        self->state.accepted.insert(peer);
        log_info("prefill node: " + theirs.identity.name + " connected (" + peer + ")");
        return mine;
      },
      [=](ping_atom) { return ok_atom::value; },
      [=](chunk_atom, kv_chunk& c) {
        if (caf::actor_cast<caf::actor_addr>(self->current_sender()) != self->state.worker.address()) return;  // only its own worker's
        auto it = self->state.out.find(c.id);
        if (it == self->state.out.end()) return;
        c.id = it->second.id;
        self->send(it->second.dest, chunk_atom::value, std::move(c));
      },
      [=](prefill_atom, remote_prefill_job& job) -> caf::result<remote_prefill_done> {
        auto sender = self->current_sender();
        if (!sender || !self->state.accepted.count(to_string(sender->node()))) {
          count(&node_service_counters::failed);
          remote_prefill_done done;
          done.id = job.id;
          done.error = "this node did not pass the handshake (send hello first)";
          return done;
        }
        // The worker prefills and streams; this actor stays free for hellos and heartbeats, and
        // forwards the chunks (the worker never talks to another node).
        auto promise = self->make_response_promise<remote_prefill_done>();
        const uint64_t theirs = job.id, mine = ++self->state.next_job;
        self->state.out[mine] = {caf::actor_cast<node_chunk_sink>(sender), theirs};
        job.id = mine;
        self->request(self->state.worker, caf::infinite, prefill_atom::value, std::move(job))
            .then([=](remote_prefill_done& r) mutable {
              self->state.out.erase(mine);
              r.id = theirs;
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
