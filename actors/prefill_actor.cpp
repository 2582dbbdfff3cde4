#include "actors/prefill_actor.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <stdexcept>

#include "actors/decode_protocol.hpp"
#include "actors/prefill_protocol.hpp"
#include "runtime/batch_decoder.hpp"

namespace fw::actors {

caf::behavior prefill_actor(caf::stateful_actor<prefill_state>* self, const engine_context* ctx) {
  return {
      [=](prefill_atom, prefill_job& job) -> caf::result<prefill_done> {
        if (self->state.fault_armed) {
          self->state.fault_armed = false;
          throw std::runtime_error("injected fault in the prefill actor");
        }
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<float> logits;
        auto r = prefill_tokens(*ctx->device, job.kv, job.tokens.data(), job.tokens.size(),
                                static_cast<int32_t>(job.kv.n_tokens), ctx->limits.prefill_chunk, logits);
        if (!r) return caf::make_error(caf::sec::runtime_error, r.err().what());
        prefill_done done;
        done.id = job.id;
        done.kv = std::move(job.kv);
        if (auto e = ctx->device->last_attention_entropy(); !e.empty() && !job.tokens.empty())
          done.attention_entropy = e.back();
        done.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        return done;
      },
      [=](fault_atom) { self->state.fault_armed = true; },
  };
}

}  // namespace fw::actors
