#include "actors/node_service_actor.hpp"

#include <caf/all.hpp>

#include <chrono>

#include "actors/protocol/errc_error.hpp"
#include "runtime/base/log.hpp"
#include "runtime/device/prefill.hpp"
#include "runtime/kv/kv_codec.hpp"

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

/// Prefills a job into the node's pool, encodes it and releases the KV (detached: the forward
/// passes block its own thread).
node_prefill_worker::behavior_type prefill_encoder(node_prefill_worker::pointer, node_service_config cfg) {
  return {
      [cfg](prefill_atom, remote_prefill_job& job) {
        remote_prefill_result r;
        r.done.id = job.id;
        if (job.wire > static_cast<uint8_t>(kv_wire::int8)) {
          r.done.error = "unknown KV wire " + std::to_string(job.wire);
          return r;
        }
        kv_block_pool& pool = cfg.device->kv_pool();
        auto kv = pool.allocate(static_cast<uint32_t>(job.tokens.size()));
        if (!kv) {
          r.done.error = "the prefill node's KV pool is full";
          return r;
        }
        if (cfg.before_prefill) cfg.before_prefill(job.id);
        const auto t0 = std::chrono::steady_clock::now();
        forward_result out;
        auto ok = prefill_tokens(*cfg.device, *kv, job.tokens.data(), job.tokens.size(), 0, cfg.prefill_chunk, out);
        r.done.prefill_ms = ms_since(t0);
        if (!out.entropy.empty() && !job.tokens.empty()) r.done.attention_entropy = out.entropy.back();
        const auto t1 = std::chrono::steady_clock::now();
        if (!ok) {
          r.done.error = ok.err().message;
        } else if (auto stream = kv_encode(pool, *kv, static_cast<kv_wire>(job.wire)); !stream) {
          r.done.error = stream.err().message;
        } else {
          r.stream.assign(reinterpret_cast<const char*>(stream->data()), stream->size());
          r.done.bytes = stream->size();
        }
        if (auto rel = pool.release(*kv); !rel) log_warn("prefill node: releasing a prefill's KV: " + rel.err().message);
        r.done.encode_ms = ms_since(t1);
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
      [=](prefill_atom, remote_prefill_job& job) -> caf::result<remote_prefill_done> {
        auto sender = self->current_sender();
        if (!sender || !self->state.accepted.count(to_string(sender->node()))) {
          count(&node_service_counters::failed);
          remote_prefill_done done;
          done.id = job.id;
          done.error = "this node did not pass the handshake (send hello first)";
          return done;
        }
        // The worker prefills and encodes; this actor stays free for hellos and heartbeats, and
        // sends the stream (the worker never talks to another node).
        auto promise = self->make_response_promise<remote_prefill_done>();
        auto dest = caf::actor_cast<node_chunk_sink>(sender);
        const uint32_t step = std::max<uint32_t>(job.chunk_bytes, 4096);
        self->request(self->state.worker, caf::infinite, prefill_atom::value, std::move(job))
            .then([=](remote_prefill_result& r) mutable {
              const auto t0 = std::chrono::steady_clock::now();
              const char* p = r.stream.data();
              for (size_t at = 0; at < r.stream.size(); at += step) {
                kv_chunk c{r.done.id, r.done.chunks++, std::string(p + at, std::min<size_t>(step, r.stream.size() - at))};
                self->send(dest, chunk_atom::value, std::move(c));
              }
              r.done.encode_ms += ms_since(t0);
              if (r.done.error.empty()) {
                count(&node_service_counters::prefills);
                count(&node_service_counters::bytes, r.done.bytes);
              } else {
                count(&node_service_counters::failed);
              }
              promise.deliver(std::move(r.done));
            });
        return promise;
      },
  };
}

}  // namespace fw::actors
