// sampling_params: the per-request knobs of token sampling, with llama.cpp's defaults.
// Plain value type: copied into each request and into its sampler; validate() once at the boundary
// (CLI, config, HTTP) and hand out the error message as is.
// Thread-safety: plain value type.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/config/sections/sampling_section.hpp"
#include "runtime/sample/gbnf_grammar.hpp"
#include "runtime/sample/json_schema.hpp"
#include "runtime/sample/regex_grammar.hpp"

namespace fw {

/// Sampling settings of one request. Chain order (as llama.cpp): logit bias, penalties, top-k,
/// top-p, min-p, temperature, softmax, seeded draw.
struct sampling_params {
  float temperature = 0.8f;      ///< <= 0: greedy argmax (ties -> lowest token id)
  int32_t top_k = 40;            ///< 0: disabled
  float top_p = 0.95f;           ///< in [0, 1]; 1: disabled
  float min_p = 0.05f;           ///< in [0, 1]; 0: disabled; keep p >= min_p * p_max
  float repeat_penalty = 1.0f;   ///< > 0; 1: disabled
  int32_t repeat_last_n = 64;    ///< penalty window over the history; 0: none; -1: all of it
  float presence_penalty = 0.0f;   ///< subtracted once from a token seen in the window
  float frequency_penalty = 0.0f;  ///< subtracted per occurrence in the window
  uint64_t seed = 0;             ///< 0: random seed; otherwise reproducible draws
  int32_t max_tokens = 128;      ///< tokens to generate; -1: until end of sequence / context
  std::vector<std::string> stop; ///< stop strings (each non-empty)
  bool ignore_eos = false;       ///< keep generating past the end-of-sequence token
  /// Tokens that end the sequence like end-of-sequence (finish reason "stop"; not part of the
  /// output), even with ignore_eos. Ids below the vocabulary size (sampler::make checks).
  std::vector<int32_t> stop_token_ids;
  /// vLLM's min_tokens: end-of-sequence and stop_token_ids cannot be sampled before this many
  /// tokens were generated (stop strings still stop).
  int32_t min_tokens = 0;
  /// OpenAI's logit_bias: logit_bias[i] (-100 to 100) is added to token logit_bias_ids[i]'s
  /// logit before every filter (-100 all but bans a token, +100 all but forces it). Parallel
  /// arrays, ids below the vocabulary size (sampler::make checks).
  std::vector<int32_t> logit_bias_ids;
  std::vector<float> logit_bias;
  /// Speculative decoding for this request: -1 the runtime's draft and k policy; 0 none (plain
  /// decoding); 1..16 at most that many draft tokens per step. Not a sampling knob, but it travels
  /// with the request the same way.
  int32_t max_draft_k = -1;
  /// -1: none; 0..20: report each generated token's log-probability (raw model distribution) and
  /// this many most likely alternatives (token_logprobs.hpp).
  int32_t logprobs = -1;
  /// -1: none; 0..20: also score the prompt (OpenAI's echo with logprobs, vLLM's prompt_logprobs):
  /// each prompt token after the first gets its log-probability under the model given the tokens
  /// before it, its rank, and this many most likely alternatives. Such a prompt is computed whole
  /// (no prefix-cache reuse) on the decode device.
  int32_t prompt_logprobs = -1;
  /// JSON mode (OpenAI's response_format {"type": "json_object"}): every token must continue a
  /// JSON object text (json_recognizer) and the answer ends when the object closes. Not with
  /// speculation (such a sequence decodes plainly) or min_tokens.
  bool json_object = false;
  /// vLLM's guided_choice: the answer is exactly one of these strings (decoded plainly, as JSON
  /// mode). Empty: any text.
  std::vector<std::string> choices;
  /// A JSON Schema's text (OpenAI's response_format {"type": "json_schema"}, vLLM's guided_json):
  /// every token must continue a JSON text the schema admits (json_schema.hpp says which schemas)
  /// and the answer ends when nothing can follow it. Decoded plainly, as JSON mode. Empty: none.
  std::string json_schema;
  /// A regular expression (vLLM's guided_regex): the answer is a text it matches whole
  /// (regex_grammar.hpp says which regexes). Decoded plainly, as JSON mode. Empty: none.
  std::string regex;
  /// A GBNF grammar (llama.cpp's grammar, vLLM's guided_grammar): the answer is a sentence of its
  /// rule root (gbnf_grammar.hpp says which grammars). Decoded plainly, as JSON mode. Empty: none.
  std::string grammar;

  /// The per-request parameters a [sampling] section describes (its defaults equal these).
  [[nodiscard]] static sampling_params from_section(const sampling_section& s) {
    sampling_params p;
    p.temperature = s.temperature;
    p.top_k = s.top_k;
    p.top_p = s.top_p;
    p.min_p = s.min_p;
    p.repeat_penalty = s.repeat_penalty;
    p.repeat_last_n = s.repeat_last_n;
    p.presence_penalty = s.presence_penalty;
    p.frequency_penalty = s.frequency_penalty;
    p.seed = s.seed;
    p.max_tokens = s.max_tokens;
    p.stop = s.stop;
    return p;
  }

  /// Checks every field; the error (errc::invalid_argument) names the field, value and range.
  [[nodiscard]] expected<void> validate() const {
    auto bad = [](const char* field, double value, const char* range) {
      char text[160];
      std::snprintf(text, sizeof text, "sampling parameter %s = %g is out of range (%s)", field,
                    value, range);
      return make_error(errc::invalid_argument, text);
    };
    if (std::isnan(temperature) || std::isinf(temperature))
      return bad("temperature", temperature, "a finite number; <= 0 means greedy");
    if (top_k < 0) return bad("top_k", top_k, ">= 0; 0 disables it");
    if (!(top_p >= 0.0f && top_p <= 1.0f)) return bad("top_p", top_p, "0 to 1; 1 disables it");
    if (!(min_p >= 0.0f && min_p <= 1.0f)) return bad("min_p", min_p, "0 to 1; 0 disables it");
    if (!(repeat_penalty > 0.0f) || std::isinf(repeat_penalty))
      return bad("repeat_penalty", repeat_penalty, "a finite number > 0; 1 disables it");
    if (repeat_last_n < -1)
      return bad("repeat_last_n", repeat_last_n, ">= -1; 0 disables it, -1 means all history");
    if (!std::isfinite(presence_penalty))
      return bad("presence_penalty", presence_penalty, "a finite number");
    if (!std::isfinite(frequency_penalty))
      return bad("frequency_penalty", frequency_penalty, "a finite number");
    if (max_tokens < -1) return bad("max_tokens", max_tokens, ">= -1; -1 means unlimited");
    if (logprobs < -1 || logprobs > 20)
      return bad("logprobs", logprobs, "-1 (none) or 0 to 20 alternatives");
    if (prompt_logprobs < -1 || prompt_logprobs > 20)
      return bad("prompt_logprobs", prompt_logprobs, "-1 (none) or 0 to 20 alternatives");
    if (max_draft_k < -1 || max_draft_k > 16)
      return bad("max_draft_k", max_draft_k, "-1 (the runtime's policy), 0 (no speculation) or 1 to 16");
    if (logit_bias_ids.size() != logit_bias.size())
      return make_error(errc::invalid_argument, "sampling parameter logit_bias: " + std::to_string(logit_bias_ids.size()) +
                                                    " token ids for " + std::to_string(logit_bias.size()) + " biases");
    for (size_t i = 0; i < logit_bias.size(); ++i) {
      if (logit_bias_ids[i] < 0) return bad("logit_bias token id", logit_bias_ids[i], "a token id >= 0");
      if (!(logit_bias[i] >= -100.0f && logit_bias[i] <= 100.0f)) return bad("logit_bias", logit_bias[i], "-100 to 100");
    }
    for (int32_t id : stop_token_ids)
      if (id < 0) return bad("stop_token_ids", id, "token ids >= 0");
    if (min_tokens < 0) return bad("min_tokens", min_tokens, ">= 0");
    if (choices.size() > 256) return bad("guided_choice", static_cast<int32_t>(choices.size()), "at most 256 strings");
    for (const auto& c : choices)
      if (c.empty() || c.size() > 4096)
        return make_error(errc::invalid_argument, "sampling parameter guided_choice: each choice must be 1 to 4096 bytes");
    if (json_object && !choices.empty())
      return make_error(errc::invalid_argument, "sampling parameter guided_choice cannot be combined with JSON mode");
    if (!choices.empty() && min_tokens > 0)
      return make_error(errc::invalid_argument, "sampling parameter min_tokens cannot be combined with guided_choice");
    if (!json_schema.empty()) {
      if (json_object || !choices.empty())
        return make_error(errc::invalid_argument, "sampling parameter json_schema cannot be combined with JSON mode "
                                                  "or guided_choice");
      if (min_tokens > 0)
        return make_error(errc::invalid_argument, "sampling parameter min_tokens cannot be combined with a JSON schema");
      if (auto g = json_schema_grammar(json_schema); !g) return g.err();
    }
    if (!regex.empty()) {
      if (json_object || !choices.empty() || !json_schema.empty())
        return make_error(errc::invalid_argument, "sampling parameter regex cannot be combined with JSON mode, a JSON "
                                                  "schema or guided_choice");
      if (min_tokens > 0)
        return make_error(errc::invalid_argument, "sampling parameter min_tokens cannot be combined with a regex");
      if (auto g = regex_grammar(regex); !g) return g.err();
    }
    if (!grammar.empty()) {
      if (json_object || !choices.empty() || !json_schema.empty() || !regex.empty())
        return make_error(errc::invalid_argument, "sampling parameter grammar cannot be combined with JSON mode, a JSON "
                                                  "schema, a regex or guided_choice");
      if (min_tokens > 0)
        return make_error(errc::invalid_argument, "sampling parameter min_tokens cannot be combined with a grammar");
      if (auto g = gbnf_grammar(grammar); !g) return g.err();
    }
    if (json_object && min_tokens > 0)
      return make_error(errc::invalid_argument, "sampling parameter min_tokens cannot be combined with JSON mode "
                                                "(the answer ends when its object closes)");
    for (size_t i = 0; i < stop.size(); ++i) {
      if (stop[i].empty())
        return make_error(errc::invalid_argument,
                          "sampling parameter stop[" + std::to_string(i) + "] is an empty string");
    }
    return {};
  }

  /// The token ids it names (logit_bias, stop_token_ids) are below n_vocab.
  [[nodiscard]] expected<void> validate_token_ids(uint32_t n_vocab) const {
    auto outside = [&](const std::vector<int32_t>& ids, const char* what) -> expected<void> {
      for (int32_t id : ids)
        if (id < 0 || static_cast<uint32_t>(id) >= n_vocab)
          return make_error(errc::invalid_argument, std::string(what) + ": token id " + std::to_string(id) +
                                                        " is outside the vocabulary (" + std::to_string(n_vocab) +
                                                        " tokens)");
      return {};
    };
    if (auto ok = outside(logit_bias_ids, "logit_bias"); !ok) return ok;
    return outside(stop_token_ids, "stop_token_ids");
  }
};

}  // namespace fw
