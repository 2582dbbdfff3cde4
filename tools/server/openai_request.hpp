// openai_request: the body of POST /v1/completions and /v1/chat/completions -> a checked
// generation request. Pure: no engine, no sockets.
//
// Rules (each violation is a 400 naming the field; nothing is clamped silently):
// - The body is one JSON object, at most max_depth levels deep (invalid UTF-8, NaN/Infinity,
//   truncation, trailing data are JSON errors).
// - model: a string (the server checks it names its model). chat: messages, a non-empty array
//   of {role: system|developer|user|assistant, content: string or [{type:"text", text}]};
//   completions: prompt, a string or an array of token ids, or a batch of either (an array of
//   strings, an array of token-id arrays); each prompt of a batch is answered as its own request.
// - temperature 0..2; top_p in (0, 1]; top_k -1 (off) or >= 0; min_p 0..1; presence/frequency
//   penalty -2..2; repetition_penalty in (0, 100]; seed an integer 0..2^64-1; max_tokens (and
//   max_completion_tokens, chat) an integer >= 1, or 0 with echo (completions: the prompt only,
//   as vLLM); stop a string or up to 16 non-empty strings;
//   n choices per prompt (1..max_choices, prompts x n at most max_choices; choice index = prompt
//   index * n + j); best_of 1 or n; stream a boolean; stream_options ({include_usage: bool}) only
//   when streaming.
// - logprobs: completions logprobs = N, chat logprobs = true with top_logprobs = N (N <= 20).
// - logit_bias: {"token id": -100..100}; vLLM's stop_token_ids (token ids), ignore_eos (bool) and
//   min_tokens (end-of-sequence and stop_token_ids barred before that many tokens).
//   Token ids beyond the vocabulary are the engine's 400.
// - echo (completions): each choice's text starts with its prompt's text; with logprobs = N the
//   logprobs columns start with the prompt's tokens (the first one's log-probability null), the
//   prompt scored by the model (sampling_params::prompt_logprobs).
// - vLLM's prompt_logprobs = N (0..20, not with stream): the prompt scored, returned per choice
//   (completions) or per response (chat) as vLLM does.
// - response_format {"type": "json_object"} (JSON mode): the answer is a JSON object
//   (sampling_params::json_object); response_format {"type": "json_schema", "json_schema":
//   {"name", "schema", "strict"}} and vLLM's guided_json (a schema or its text): the answer is
//   JSON the schema admits (sampling_params::json_schema; an unsupported keyword is a 400 naming
//   it, json_schema.hpp); vLLM's guided_regex: the answer matches the regex whole
//   (sampling_params::regex, regex_grammar.hpp); vLLM's guided_choice (1 to 256 non-empty
//   strings): the answer is exactly one of them (sampling_params::choices); vLLM's guided_grammar
//   or llama.cpp's grammar (GBNF text): the answer is a sentence of its rule root
//   (sampling_params::grammar, gbnf_grammar.hpp). All decode without speculation.
// - chat: tools (up to 128 functions, each parameters schema checked as a JSON schema), tool_choice
//   ("none", "auto", "required" or a named function), parallel_tool_calls; messages may hold an
//   assistant's tool_calls and role "tool" results. tool_calls.hpp says how the prompt shows them
//   and how the answer is constrained and read; required or a named function is not combined
//   with response_format / guided decoding or min_tokens (auto is: calls are read from the answer).
// - Not built (refused, not ignored): chat's echo, suffix, the legacy functions / function_call,
//   best_of other than 1 or n.
// - flywheel's extensions: return_token_ids (bool) adds the generated ids to each choice / chunk;
//   max_draft_tokens (0..16) caps this request's speculative draft tokens per step (0: none).
// Unknown fields are ignored, as vLLM does (clients send vendor fields).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/sample/sampling_params.hpp"
#include "runtime/text/chat_template.hpp"
#include "tools/server/api_error.hpp"
#include "tools/server/tool_calls.hpp"

namespace fw::server {

/// One completions prompt: text (the server tokenizes it) or token ids.
struct completion_prompt {
  std::string text;
  std::vector<int32_t> ids;
  bool is_ids = false;
};

struct generation_request {
  bool chat = false;
  std::string model;
  std::vector<chat_message> messages;      ///< chat
  std::vector<completion_prompt> prompts;  ///< completions: one prompt, or a batch
  uint32_t n = 1;                          ///< choices per prompt
  sampling_params params;              ///< the server's defaults with the request's fields applied
  bool max_tokens_set = false;         ///< false: the default, capped by the context left
  bool stream = false;
  bool include_usage = false;
  bool return_token_ids = false;
  bool echo = false;  ///< completions: each choice's text starts with its prompt
  bool prompt_only = false;     ///< completions: max_tokens = 0 with echo (the prompt, scored if asked)
  int32_t prompt_logprobs = -1; ///< vLLM's prompt_logprobs (-1: not asked)
  tool_spec tools;              ///< chat: tools, tool_choice, parallel_tool_calls (tool_calls.hpp)
};

struct parse_limits {
  int max_depth = 64;
  size_t max_stop = 16;
  int max_logprobs = 20;  ///< most alternatives per token
  uint32_t max_choices = 64;  ///< most choices per request (prompts x n)
  size_t max_logit_bias = 1024;     ///< most logit_bias entries
  size_t max_stop_token_ids = 256;  ///< most stop_token_ids
};

/// The request, or the 400 that answers it.
using parse_result = std::variant<generation_request, api_error>;

[[nodiscard]] parse_result parse_generation_request(std::string_view body, bool chat,
                                                    const sampling_params& defaults, const parse_limits& limits = {});

}  // namespace fw::server
