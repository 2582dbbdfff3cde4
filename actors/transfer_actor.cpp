#include "actors/transfer_actor.hpp"

#include <caf/all.hpp>

#include <chrono>

#include "runtime/kv/kv_codec.hpp"

namespace fw::actors {

transfer_actor::behavior_type transfer_worker(transfer_actor::stateful_pointer<transfer_state>, const engine_context* ctx) {
  return {
      [=](transfer_atom, transfer_job& job) {
        const auto t0 = std::chrono::steady_clock::now();
        transfer_done done;
        done.id = job.id;
        const kv_block_pool* src = ctx->pool_by_id(job.from.pool_id);
        kv_block_pool* dst = ctx->pool_by_id(job.to.pool_id);
        if (!src || !dst) {
          done.error = "kv transfer: a handle names no pool of this engine";
          done.from = std::move(job.from);
          done.to = std::move(job.to);
          return done;
        }
        done.f32_bytes = kv_f32_bytes(src->layout(), job.from.n_tokens);
        const kv_wire wire = job.wire <= static_cast<uint8_t>(kv_wire::int8) ? static_cast<kv_wire>(job.wire) : ctx->limits.kv_transfer;
        auto stream = kv_encode(*src, job.from, wire);
        if (!stream) {
          done.error = stream.err().message;
        } else {
          if (ctx->faults && ctx->faults->damage_kv_stream) ctx->faults->damage_kv_stream(job.id, *stream);
          done.bytes = stream->size();
          if (auto ok = kv_decode(*stream, *dst, job.to); !ok) done.error = ok.err().message;
        }
        done.from = std::move(job.from);
        done.to = std::move(job.to);
        done.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        return done;
      },
  };
}

}  // namespace fw::actors
