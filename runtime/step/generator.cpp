#include "runtime/step/generator.hpp"

#include <chrono>
#include <optional>

#include "runtime/sched/admission.hpp"
#include "runtime/step/batch_decoder.hpp"
#include "runtime/sample/sampler.hpp"
#include "runtime/step/sequence.hpp"

namespace fw {
namespace {

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// Releases a sequence's KV blocks on every exit path.
class handle_guard {
 public:
  handle_guard(kv_block_pool& pool, kv_handle& h) : pool_(pool), h_(h) {}
  ~handle_guard() { ignore_error("generator KV", pool_.release(h_)); }
  handle_guard(const handle_guard&) = delete;
  handle_guard& operator=(const handle_guard&) = delete;

 private:
  kv_block_pool& pool_;
  kv_handle& h_;
};

}  // namespace

double generation_result::decode_tok_s() const {
  // The first token comes from the prefill; decode covers the rest.
  return decode_ms > 0 && tokens.size() > 1 ? (tokens.size() - 1) * 1000.0 / decode_ms : 0;
}

expected<generation_result> generator::run(std::span<const int32_t> prompt,
                                           const sampling_params& params,
                                           const text_callback& on_text) {
  if (auto ok = params.validate(); !ok) return ok.err();
  // The runtime's admission checks (the scheduler actor uses the same); max_tokens = 0 is allowed
  // here: the prompt is still prefilled (reference tests read its logits).
  auto admitted = admit_request(prompt, model_.config().n_vocab, opts_.n_ctx, params.max_tokens, true);
  if (!admitted) return admitted.err();
  const uint32_t budget = *admitted;

  auto smp = sampler::make(params, static_cast<int32_t>(model_.config().n_vocab));
  if (!smp) return smp.err();

  generation_result res;
  res.prompt_tokens.assign(prompt.begin(), prompt.end());
  auto seq = std::make_unique<sequence>(0, res.prompt_tokens, params, static_cast<int32_t>(model_.config().n_vocab), budget);
  kv_block_pool& pool = backend_.kv_pool();
  auto alloc = pool.allocate(0);
  if (!alloc) return make_error(errc::out_of_memory, "KV cache pool exhausted");
  seq->kv() = std::move(*alloc);
  std::optional<handle_guard> guard(std::in_place, pool, seq->kv());

  forward_result result;
  std::vector<float>& logits = result.logits;
  forward_batch batch;
  const auto t0 = clock_type::now();
  if (auto r = prefill_tokens(backend_, seq->kv(), prompt.data(), prompt.size(), 0, opts_.prefill_chunk, result); !r)
    return r.err();
  res.prefill_ms = ms_since(t0);
  if (opts_.keep_first_logits) res.first_logits = logits;
  std::optional<float> entropy;
  if (!result.entropy.empty()) entropy = result.entropy.back();
  if (budget == 0) {
    res.finish_reason = "length";
    return res;
  }

  const auto t1 = clock_type::now();
  // Streams one outcome; false when the generation ends (finished or cancelled).
  auto deliver = [&](token_outcome& out) {
    if (!out.text.empty()) {
      res.text += out.text;
      if (on_text && !on_text(out.text)) {
        res.finish_reason = "cancelled";
        return false;
      }
    }
    if (out.finished) {
      res.finish_reason = out.finish_reason;
      return false;
    }
    return true;
  };

  // The first token always comes from the prompt's logits.
  auto first = seq->advance(logits, model_.vocab());
  res.ttft_ms = ms_since(t0);
  bool going = deliver(first);

  if (!opts_.draft) {
    while (going) {
      const int32_t tok = seq->next_input();
      batch.clear();
      batch.add_sequence(&seq->kv(), &tok, 1, seq->next_position(), false);
      if (auto r = backend_.forward(batch, logits); !r) return r.err();
      auto out = seq->advance(logits, model_.vocab());
      going = deliver(out);
    }
    res.tokens = seq->generated();
  } else {
    // Speculative decoding through the same batch decoder the decode actor uses (one sequence).
    guard.reset();  // the decoder owns the sequence and its KV from here
    batch_decoder dec(model_, backend_, 1);
    dec.set_speculation(opts_.draft, opts_.policy);
    dec.set_gate(gate_);  // what earlier requests measured: whether drafting pays here
    dec.set_step_costs(step_costs_);  // and what its steps cost
    res.tokens = seq->generated();
    if (going) {
      dec.add(std::move(seq), entropy);
      while (going && dec.active() > 0) {
        auto step = dec.step();
        if (!step.failed.empty()) return step.failed.front().err;
        for (auto& e : step.events) {
          if (e.token >= 0) res.tokens.push_back(e.token);
          token_outcome out{e.token, std::move(e.text), e.finished, std::move(e.finish_reason)};
          if (!(going = deliver(out))) break;
        }
      }
      if (!going && res.finish_reason == "cancelled") dec.clear();
    } else {
      ignore_error("generator KV", pool.release(seq->kv()));
    }
    res.spec = dec.speculation_stats();
    res.spec_used = true;
    gate_ = dec.gate();
    step_costs_ = dec.step_costs();
  }
  res.decode_ms = ms_since(t1) - (res.ttft_ms - res.prefill_ms);
  return res;
}

}  // namespace fw
