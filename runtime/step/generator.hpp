// generator: runs one sequence end to end on a backend: prefill the prompt (in chunks), then
// sample and decode token by token until end-of-generation, a stop string, max_tokens or
// cancellation. Text streams through a callback in valid UTF-8 pieces, with stop strings held
// back. The sequence's KV handle is always released at the end.
// Thread-safety: one run() at a time per backend.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/device/backend.hpp"
#include "runtime/step/batch_decoder.hpp"
#include "runtime/base/expected.hpp"
#include "runtime/model/model.hpp"
#include "runtime/sample/sampling_params.hpp"

namespace fw {

struct generation_result {
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> tokens;  ///< generated ids (a stop string's tokens included, EOS excluded)
  std::string text;             ///< generated text, cut before a stop string
  std::string finish_reason;    ///< "stop" (EOS or stop string), "length", "cancelled"
  double prefill_ms = 0;
  double decode_ms = 0;
  double ttft_ms = 0;           ///< prefill plus the first sampled token
  /// First-step logits (n_vocab floats), kept only when asked for (reference tests).
  std::vector<float> first_logits;
  bool spec_used = false;  ///< speculative decoding ran
  spec_stats spec;

  double prefill_tok_s() const { return prefill_ms > 0 ? prompt_tokens.size() * 1000.0 / prefill_ms : 0; }
  double decode_tok_s() const;
};

/// Called with each new piece of text; return false to cancel the generation.
using text_callback = std::function<bool(std::string_view piece)>;

struct generator_options {
  uint32_t n_ctx = 2048;          ///< context window of one sequence
  uint32_t prefill_chunk = 512;   ///< rows per prefill forward
  bool keep_first_logits = false;
  drafter* draft = nullptr;       ///< speculative decoding when set (must outlive run())
  k_policy policy{};              ///< draft length policy for speculative decoding
};

class generator {
 public:
  generator(const model& m, backend& b, generator_options opts) : model_(m), backend_(b), opts_(opts) {}

  expected<generation_result> run(std::span<const int32_t> prompt, const sampling_params& params,
                                  const text_callback& on_text = {});

 private:
  const model& model_;
  backend& backend_;
  generator_options opts_;
  spec_gate gate_;  ///< carried from request to request (see batch_decoder::gate)
  step_cost_tracker step_costs_;  ///< carried from request to request (see batch_decoder::step_costs)
};

}  // namespace fw
