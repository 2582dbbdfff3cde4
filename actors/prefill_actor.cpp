#include "actors/prefill_actor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "actors/protocol/errc_error.hpp"
#include "runtime/device/prefill.hpp"
#include "runtime/sample/token_logprobs.hpp"

namespace fw::actors {
namespace {
/// The co-located fallback prefills on the decode device in chunks of at most this many tokens,
/// so that decode steps (which go first) wait behind little: ~60 ms of one core here.
constexpr uint32_t fallback_chunk = 64;
/// Prompt scoring computes every row's logits: at most this many rows a forward.
constexpr uint32_t score_chunk = 64;
}  // namespace

prefill_actor::behavior_type prefill_worker(prefill_actor::stateful_pointer<prefill_state> self, const engine_context* ctx,
                                            backend* device, bool fallback) {
  const uint32_t max_chunk = fallback ? std::min(ctx->limits.prefill_chunk, fallback_chunk) : ctx->limits.prefill_chunk;
  // Chunks sized by time only where decode steps wait behind them: on the decode device.
  if (ctx->limits.prefill_chunk_s > 0 && device == ctx->device()) {
    prefill_chunk_budget::limits l;
    l.target_s = ctx->limits.prefill_chunk_s;
    l.max_chunk = max_chunk;
    self->state.budget.emplace(l);
  }
  return {
      [=](prefill_atom, prefill_job& job) -> caf::result<prefill_done> {
        if (ctx->faults && ctx->faults->crash_prefill && ctx->faults->crash_prefill(job.id))
          throw std::runtime_error("injected fault in the prefill worker");
        if (!fallback && ctx->faults && ctx->faults->stall_prefill) ctx->faults->stall_prefill(job.id);
        const auto t0 = std::chrono::steady_clock::now();
        forward_result out;
        // A rollout stage without logical PD: one forward.
        const uint32_t chunk = job.chunk > 0 ? job.chunk : max_chunk;
        prefill_chunking chunking{[chunk](int32_t, size_t) { return chunk; }, {}, {}};
        if (auto& budget = self->state.budget; budget && job.chunk == 0) {
          chunking.size = [&budget](int32_t pos, size_t left) { return budget->next(static_cast<uint32_t>(pos), left); };
          chunking.ran = [&budget](int32_t pos, uint32_t rows, double s) {
            budget->observe(static_cast<uint32_t>(pos), rows, s);
          };
        }
        prefill_done done;
        if (job.prompt_logprobs >= 0) {
          // Prompt scoring: every row's logits, a row's next token scored as the chunk finishes;
          // chunks of at most score_chunk rows bound the logits held (rows x n_vocab floats).
          chunking.size = [inner = chunking.size](int32_t pos, size_t left) {
            return std::min<uint32_t>(inner(pos, left), score_chunk);
          };
          chunking.logits = [&job, &done](size_t first, size_t rows, const forward_result& res) {
            const size_t nv = res.logits.size() / std::max<size_t>(rows, 1);
            for (size_t i = 0; i < rows; ++i) {
              const size_t at = first + i;
              const int32_t next = at + 1 < job.tokens.size() ? job.tokens[at + 1] : job.next_token;
              if (next < 0 || static_cast<size_t>(next) >= nv) continue;
              done.prompt_logprobs.push_back(logprobs_of(res.logits_row(i, nv), next, job.prompt_logprobs));
            }
          };
        }
        auto r = prefill_tokens(*device, job.kv, job.tokens.data(), job.tokens.size(),
                                static_cast<int32_t>(job.kv.n_tokens), chunking, out, &done.chunks);
        if (!r) return to_caf_error(r.err());
        done.rows = static_cast<uint32_t>(job.tokens.size());
        done.id = job.id;
        done.kv = std::move(job.kv);
        if (!out.entropy.empty() && !job.tokens.empty()) done.attention_entropy = out.entropy.back();
        const auto t1 = std::chrono::steady_clock::now();
        done.ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
        done.done_s = std::chrono::duration<double>(t1.time_since_epoch()).count();
        return done;
      },
  };
}

}  // namespace fw::actors
