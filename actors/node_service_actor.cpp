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

node_service_actor::behavior_type node_service(node_service_actor::stateful_pointer<node_service_state> self,
                                               node_service_config cfg) {
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
        remote_prefill_done done;
        done.id = job.id;
        auto sender = self->current_sender();
        if (!sender || !self->state.accepted.count(to_string(sender->node()))) {
          count(&node_service_counters::failed);
          done.error = "this node did not pass the handshake (send hello first)";
          return done;
        }
        if (job.wire > static_cast<uint8_t>(kv_wire::int8)) {
          count(&node_service_counters::failed);
          done.error = "unknown KV wire " + std::to_string(job.wire);
          return done;
        }
        kv_block_pool& pool = cfg.device->kv_pool();
        auto kv = pool.allocate(static_cast<uint32_t>(job.tokens.size()));
        if (!kv) {
          count(&node_service_counters::failed);
          done.error = "the prefill node's KV pool is full";
          return done;
        }
        if (cfg.before_prefill) cfg.before_prefill(job.id);
        const auto t0 = std::chrono::steady_clock::now();
        forward_result out;
        auto ok = prefill_tokens(*cfg.device, *kv, job.tokens.data(), job.tokens.size(), 0, cfg.prefill_chunk, out);
        done.prefill_ms = ms_since(t0);
        if (!out.entropy.empty() && !job.tokens.empty()) done.attention_entropy = out.entropy.back();
        const auto t1 = std::chrono::steady_clock::now();
        if (!ok) {
          done.error = ok.err().message;
        } else if (auto stream = kv_encode(pool, *kv, static_cast<kv_wire>(job.wire)); !stream) {
          done.error = stream.err().message;
        } else {
          const size_t step = std::max<uint32_t>(job.chunk_bytes, 4096);
          auto dest = caf::actor_cast<node_chunk_sink>(sender);
          const auto* p = reinterpret_cast<const char*>(stream->data());
          for (size_t at = 0; at < stream->size(); at += step) {
            kv_chunk c{job.id, done.chunks++, std::string(p + at, std::min(step, stream->size() - at))};
            self->send(dest, chunk_atom::value, std::move(c));
          }
          done.bytes = stream->size();
        }
        if (auto r = pool.release(*kv); !r) log_warn("prefill node: releasing a prefill's KV: " + r.err().message);
        done.encode_ms = ms_since(t1);
        if (done.error.empty()) {
          count(&node_service_counters::prefills);
          count(&node_service_counters::bytes, done.bytes);
        } else {
          count(&node_service_counters::failed);
        }
        return done;
      },
  };
}

}  // namespace fw::actors
