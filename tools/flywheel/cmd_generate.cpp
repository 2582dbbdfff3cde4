#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "runtime/step/generator.hpp"
#include "runtime/text/chat_encoding.hpp"
#include "tools/flywheel/arg_parser.hpp"
#include "tools/flywheel/commands.hpp"
#include "tools/flywheel/model_session.hpp"

namespace fw::cli {
namespace {

expected<sampling_params> sampling_from(const arg_parser& a) {
  // Defaults: [sampling] of --config (or the built-in defaults); flags given explicitly override
  // them, checked like config values.
  auto cfg = model_session::load_config(a);
  if (!cfg) return cfg.err();
  static const std::pair<const char*, const char*> flags[] = {
      {"temperature", "sampling.temperature"},
      {"top-k", "sampling.top_k"},
      {"top-p", "sampling.top_p"},
      {"min-p", "sampling.min_p"},
      {"repeat-penalty", "sampling.repeat_penalty"},
      {"max-tokens", "sampling.max_tokens"},
      {"seed", "sampling.seed"}};
  for (const auto& [flag, key] : flags) {
    if (!a.has(flag)) continue;
    if (auto ok = cfg->set(key, a.str(flag)); !ok)
      return make_error(ok.err().code, std::string("--") + flag + ": " + ok.err().message);
  }
  sampling_params p = sampling_params::from_section(cfg->sampling);
  if (a.has("stop")) p.stop = {a.str("stop")};
  p.ignore_eos = a.on("ignore-eos");
  // --json-schema / --grammar: the text, or @FILE. Constrained answers decode plainly.
  for (const auto& [flag, field] : {std::pair{"json-schema", &sampling_params::json_schema},
                                    std::pair{"grammar", &sampling_params::grammar}}) {
    if (!a.has(flag)) continue;
    std::string text = a.str(flag);
    if (!text.empty() && text[0] == '@') {
      std::ifstream f(text.substr(1), std::ios::binary);
      if (!f) return make_error(errc::invalid_argument, std::string("--") + flag + ": cannot read " + text.substr(1));
      text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    if (text.empty()) return make_error(errc::invalid_argument, std::string("--") + flag + ": the text is empty");
    p.*field = std::move(text);
    p.max_draft_k = 0;
  }
  if (auto ok = p.validate(); !ok) return ok.err();
  return p;
}

}  // namespace

int cmd_generate(int argc, char** argv) {
  arg_parser args("generate");
  model_session::declare_flags(args);
  args.option("prompt", "prompt text")
      .flag("chat", "wrap the prompt as a user turn with the model's chat template")
      .option("system", "system message for --chat")
      .option("max-tokens", "tokens to generate", "128")
      .option("temperature", "sampling temperature (0 = greedy)", "0.8")
      .option("top-k", "top-k (0 = off)", "40")
      .option("top-p", "top-p (1 = off)", "0.95")
      .option("min-p", "min-p (0 = off)", "0.05")
      .option("repeat-penalty", "repetition penalty (1 = off)", "1.0")
      .option("seed", "sampling seed (0 = random)", "0")
      .option("stop", "stop string")
      .flag("ignore-eos", "keep generating past end-of-sequence")
      .option("json-schema", "the answer is JSON this JSON Schema admits: the schema's text, or @FILE")
      .option("grammar", "the answer is a sentence of this GBNF grammar's rule root: its text, or @FILE")
      .flag("json", "print one JSON object instead of streaming text");
  if (auto done = args.parse_or_exit_code(argc, argv)) return *done;
  if (!args.has("prompt")) {
    std::fprintf(stderr, "generate: --prompt is required\n");
    return 2;
  }
  auto params = sampling_from(args);
  if (!params) {
    std::fprintf(stderr, "generate: %s\n", params.err().message.c_str());
    return 2;
  }
  const bool json = args.on("json");
  auto session = model_session::open(args, !json);
  if (!session) {
    std::fprintf(stderr, "generate: %s\n", session.err().what().c_str());
    return 1;
  }
  const model& m = *session->m;
  std::string text = args.str("prompt");
  std::vector<int32_t> prompt;
  if (args.on("chat")) {
    if (!m.chat()) {
      std::fprintf(stderr, "generate: --chat: %s\n", m.chat().err().message.c_str());
      return 1;
    }
    std::vector<chat_message> msgs;
    if (args.has("system")) msgs.push_back({"system", args.str("system")});
    msgs.push_back({"user", text});
    // Message text never becomes control tokens ("<|im_end|>" in --prompt stays text).
    prompt = encode_chat(m.vocab(), *m.chat(), msgs, true);
  } else {
    // A raw prompt: the user writes the whole text, control tokens included.
    prompt = m.vocab().encode(text, true, true);
  }

  generator_options go;
  go.n_ctx = session->n_ctx;
  go.draft = session->draft.get();
  go.policy = session->policy;
  generator gen(m, *session->device(), go);
  auto res = gen.run(prompt, *params, [&](std::string_view piece) {
    if (!json) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  });
  if (!res) {
    std::fprintf(stderr, "%sgenerate: %s\n", json ? "" : "\n", res.err().what().c_str());
    return 1;
  }
  if (json) {
    nlohmann::json j;
    j["prompt_tokens"] = res->prompt_tokens;
    j["tokens"] = res->tokens;
    j["text"] = res->text;
    j["finish_reason"] = res->finish_reason;
    j["prefill_ms"] = res->prefill_ms;
    j["decode_ms"] = res->decode_ms;
    j["ttft_ms"] = res->ttft_ms;
    j["prefill_tok_s"] = res->prefill_tok_s();
    j["decode_tok_s"] = res->decode_tok_s();
    if (res->spec_used) {
      const auto& sp = res->spec;
      j["spec"] = {{"draft", session->draft->name()},
                   {"k", session->cfg.speculative.k ? nlohmann::json(*session->cfg.speculative.k) : nlohmann::json("auto")},
                   {"drafted", sp.draft_tokens},
                   {"accepted", sp.accepted_tokens},
                   {"acceptance_rate", sp.acceptance_rate()},
                   {"mean_accepted_length", sp.mean_accepted_length()},
                   {"draft_ms", sp.draft_ms},
                   {"verify_ms", sp.verify_ms},
                   {"accepted_per_position", sp.accepted_at},
                   {"proposed_per_position", sp.proposed_at}};
    }
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr, "[%zu prompt tokens, %.1f tok/s prefill; %zu generated, %.1f tok/s decode; finish: %s]\n",
                 res->prompt_tokens.size(), res->prefill_tok_s(), res->tokens.size(), res->decode_tok_s(),
                 res->finish_reason.c_str());
    if (res->spec_used)
      std::fprintf(stderr, "[speculative: draft %s, %llu drafted, %llu accepted (%.0f%%), %.2f tokens per step]\n",
                   session->draft->name().c_str(), static_cast<unsigned long long>(res->spec.draft_tokens),
                   static_cast<unsigned long long>(res->spec.accepted_tokens), 100 * res->spec.acceptance_rate(),
                   res->spec.mean_accepted_length());
  }
  return 0;
}

}  // namespace fw::cli
