#include "tools/server/openai_service.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include <nlohmann/json.hpp>

#include "runtime/sched/admission.hpp"
#include "runtime/text/chat_encoding.hpp"

namespace fw::server {

namespace {

using json = nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

double monotonic_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string path_of(const std::string& target) { return target.substr(0, target.find('?')); }

/// Equal strings, in time that depends only on their lengths.
bool same_secret(const std::string& a, const std::string& b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

json usage_json(uint32_t prompt, uint32_t completion, uint32_t cached) {
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

std::string sse(const std::string& data) { return "data: " + data + "\n\n"; }

json bytes_of(const std::string& piece) {
  json b = json::array();
  for (unsigned char c : piece) b.push_back(c);
  return b;
}

/// The logprobs of one token event: chat entries ({token, logprob, bytes, top_logprobs}) or the
/// completions columns (tokens, token_logprobs, top_logprobs, text_offset), appended to `into`.
void add_logprobs(const tokenizer& vocab, const actors::stream_event& e, bool chat, size_t& text_offset, json& into) {
  if (e.logprobs.empty() || e.tokens.empty()) return;
  const size_t n_top = e.top_ids.size() / e.tokens.size();
  for (size_t t = 0; t < e.tokens.size() && t < e.logprobs.size(); ++t) {
    const std::string piece = vocab.token_to_piece(e.tokens[t]);
    if (chat) {
      json top = json::array();
      for (size_t i = 0; i < n_top; ++i) {
        const std::string alt = vocab.token_to_piece(e.top_ids[t * n_top + i]);
        top.push_back({{"token", alt}, {"logprob", e.top_logprobs[t * n_top + i]}, {"bytes", bytes_of(alt)}});
      }
      into["content"].push_back(
          {{"token", piece}, {"logprob", e.logprobs[t]}, {"bytes", bytes_of(piece)}, {"top_logprobs", std::move(top)}});
    } else {
      json top = json::object();
      for (size_t i = 0; i < n_top; ++i)
        top[vocab.token_to_piece(e.top_ids[t * n_top + i])] = e.top_logprobs[t * n_top + i];
      into["tokens"].push_back(piece);
      into["token_logprobs"].push_back(e.logprobs[t]);
      into["top_logprobs"].push_back(std::move(top));
      into["text_offset"].push_back(text_offset);
    }
    text_offset += piece.size();
  }
}

json empty_logprobs(bool chat) {
  if (chat) return {{"content", json::array()}};
  return {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()},
          {"text_offset", json::array()}};
}

/// The completions logprobs columns of a scored prompt (echo with logprobs): every prompt token
/// from text offset 0, the first one's log-probability null, each other one's alternatives and
/// itself (as vLLM), then the columns in `after` (the generated tokens').
json prompt_columns(const tokenizer& vocab, const std::vector<int32_t>& ids, const std::vector<token_logprobs>& scored,
                    size_t n_top, const json& after) {
  json out = empty_logprobs(false);
  size_t offset = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string piece = vocab.token_to_piece(ids[i]);
    out["tokens"].push_back(piece);
    out["text_offset"].push_back(offset);
    offset += piece.size();
    if (i == 0 || i > scored.size()) {
      out["token_logprobs"].push_back(nullptr);
      out["top_logprobs"].push_back(nullptr);
      continue;
    }
    const token_logprobs& t = scored[i - 1];
    json top = json::object();
    for (size_t a = 0; a < t.top_ids.size() && a < n_top; ++a) top[vocab.token_to_piece(t.top_ids[a])] = t.top_logprobs[a];
    top[piece] = t.logprob;
    out["token_logprobs"].push_back(t.logprob);
    out["top_logprobs"].push_back(std::move(top));
  }
  for (const char* col : {"tokens", "token_logprobs", "top_logprobs", "text_offset"})
    if (after.contains(col))
      for (const auto& v : after[col]) out[col].push_back(v);
  return out;
}

/// Bytes of a prompt's token pieces (where the echo's logprobs columns leave the text offset).
size_t pieces_bytes(const tokenizer& vocab, const std::vector<int32_t>& ids) {
  size_t n = 0;
  for (int32_t id : ids) n += vocab.token_to_piece(id).size();
  return n;
}

/// vLLM's prompt_logprobs: null for the first prompt token, then per token {"id": {logprob, rank,
/// decoded_token}} of its alternatives and itself.
json vllm_prompt_logprobs(const tokenizer& vocab, const std::vector<int32_t>& ids, const std::vector<token_logprobs>& scored,
                          size_t n_top) {
  json out = json::array();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i == 0 || i > scored.size()) {
      out.push_back(nullptr);
      continue;
    }
    const token_logprobs& t = scored[i - 1];
    json d = json::object();
    for (size_t a = 0; a < t.top_ids.size() && a < n_top; ++a)
      d[std::to_string(t.top_ids[a])] = {
          {"logprob", t.top_logprobs[a]}, {"rank", a + 1}, {"decoded_token", vocab.token_to_piece(t.top_ids[a])}};
    d[std::to_string(t.token)] = {{"logprob", t.logprob}, {"rank", t.rank}, {"decoded_token", vocab.token_to_piece(t.token)}};
    out.push_back(std::move(d));
  }
  return out;
}


// A choice's calls as OpenAI writes them; a stream's deltas number them (index).
json tool_calls_json(const std::string& response_id, uint32_t choice, const std::vector<tool_call>& calls,
                     bool stream) {
  json out = json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    json c = {{"id", "call_" + response_id.substr(response_id.find('-') + 1) + "_" + std::to_string(choice) + "_" +
                         std::to_string(k)},
              {"type", "function"},
              {"function", {{"name", calls[k].name}, {"arguments", calls[k].arguments}}}};
    if (stream) c["index"] = k;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

struct openai_service::choice {
  uint64_t engine_id = 0;
  bool submitted = false;
  bool finished = false;
  bool started = false;  // stream: this choice's first chunk is out (chat: with the role)
  std::string text;
  std::vector<int32_t> ids;
  json logprobs;           // non-stream: every token's; stream: sent per chunk
  size_t text_offset = 0;  // completions logprobs: bytes of completion text so far
  std::string finish_reason;
  uint32_t completion_tokens = 0;
  tool_stream_filter filter;  // stream, tool_choice auto: content until a call may begin
  tool_answer answer;         // with tools: what the finished text says
};

struct openai_service::response {
  std::shared_ptr<reply_channel> reply;
  const char* route = "";
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  bool return_ids = false;
  bool want_logprobs = false;
  bool echo_logprobs = false;  // completions echo with logprobs: the columns start with the prompt
  bool prompt_only = false;    // max_tokens = 0 with echo: the one token the engine makes is not returned
  bool vllm_prompt = false;    // vLLM's prompt_logprobs asked
  size_t echo_top = 0, vllm_top = 0;  // alternatives each of those asked for (the scores hold the wider)
  bool started = false;  // stream: headers are out
  bool gone = false;     // the client disconnected
  bool failed = false;   // answered with an error; the other choices are cancelled
  std::string response_id;
  uint32_t n = 1;                               // choices per prompt
  std::vector<std::vector<int32_t>> prompts;    // token ids (cleared once all its choices are submitted)
  std::vector<int32_t> max_tokens;              // per prompt: what the window leaves
  std::vector<std::string> echo;                // per prompt, with echo: the text each choice starts with
  std::vector<uint32_t> prompt_tokens;          // per prompt, from the engine's final events
  std::vector<uint32_t> cached_tokens;          // per prompt: of its first choice, from the prefix cache
  std::vector<std::vector<int32_t>> prompt_ids;            // per prompt, when it is scored
  std::vector<std::vector<token_logprobs>> scored;         // per prompt: its first choice's scores
  sampling_params params;
  tool_spec tools;                              // chat with tools (tool_calls.hpp); inactive otherwise
  std::vector<choice> choices;                  // index = prompt * n + j
  size_t outstanding = 0;                       // submitted choices whose final event has not arrived
};

openai_service::openai_service(actors::engine& engine, service_options options,
                               std::function<void(std::function<void()>)> post)
    : engine_(engine), opt_(std::move(options)), post_(std::move(post)), alerts_(opt_.alerts), admin_(engine, opt_.admin),
      created_(static_cast<int64_t>(std::time(nullptr))) {}

openai_service::~openai_service() = default;

bool openai_service::authorized(const http_request& req) const {
  if (opt_.api_key.empty()) return true;
  const std::string prefix = "Bearer ";
  if (req.authorization.size() < prefix.size() || req.authorization.compare(0, prefix.size(), prefix) != 0) return false;
  return same_secret(req.authorization.substr(prefix.size()), opt_.api_key);
}

void openai_service::count_response(const char* route, unsigned status) {
  engine_.metrics()
      .counter(series::http_requests, {{"route", route}, {"code", std::to_string(status)}})
      .inc();
}

void openai_service::reply_error(reply_channel& reply, const api_error& e, const char* route) {
  http_response r;
  r.status = e.status;
  r.body = e.body();
  if (e.retry_after_s > 0) r.headers.push_back({"Retry-After", std::to_string(e.retry_after_s)});
  if (e.status == 401) r.headers.push_back({"WWW-Authenticate", "Bearer"});
  count_response(route, e.status);
  reply.respond(std::move(r));
}

void openai_service::handle(http_request req, std::shared_ptr<reply_channel> reply) {
  const std::string path = path_of(req.target);
  auto method_not_allowed = [&](const char* route, const char* allowed) {
    api_error e;
    e.status = 405;
    e.message = "method " + req.method + " is not allowed on " + path + "; use " + allowed;
    reply_error(*reply, e, route);
  };
  if (path == "/health") {
    if (req.method != "GET") return method_not_allowed("/health", "GET");
    const bool ok = !draining_.load();
    count_response("/health", ok ? 200 : 503);
    return reply->respond({ok ? 200u : 503u, "application/json",
                           ok ? R"({"status":"ok"})" : R"({"status":"shutting down"})", {}});
  }
  if (path == "/metrics") {
    if (req.method != "GET") return method_not_allowed("/metrics", "GET");
    count_response("/metrics", 200);
    return reply->respond({200, "text/plain; version=0.0.4; charset=utf-8", metrics_text(), {}});
  }
  if (path.rfind("/admin/", 0) == 0 || path == "/admin") {
    api_error e;
    if (opt_.api_key.empty()) {
      e.status = 403;
      e.type = "permission_error";
      e.message = "the admin endpoints are disabled: set [server] api_key (or --api-key) to use them";
      return reply_error(*reply, e, "/admin");
    }
    if (!authorized(req)) {
      e.status = 401;
      e.type = "authentication_error";
      e.code = "invalid_api_key";
      e.message = "a valid API key is required: send \"Authorization: Bearer <key>\"";
      return reply_error(*reply, e, "/admin");
    }
    http_response r = admin_.handle(req, path);
    count_response("/admin", r.status);
    return reply->respond(std::move(r));
  }
  const bool tokenizer_route = path == "/tokenize" || path == "/detokenize";
  if ((path.rfind("/v1/", 0) == 0 || tokenizer_route) && !authorized(req)) {
    api_error e;
    e.status = 401;
    e.type = "authentication_error";
    e.code = "invalid_api_key";
    e.message = "a valid API key is required: send \"Authorization: Bearer <key>\"";
    return reply_error(*reply, e, "/v1");
  }
  if (path == "/v1/models") {
    if (req.method != "GET") return method_not_allowed("/v1/models", "GET");
    json m = {{"id", opt_.model_name}, {"object", "model"}, {"created", created_},
              {"owned_by", "flywheel"}, {"max_model_len", opt_.n_ctx}};
    count_response("/v1/models", 200);
    return reply->respond({200, "application/json", dump({{"object", "list"}, {"data", json::array({m})}}), {}});
  }
  if (tokenizer_route) {
    if (req.method != "POST") return method_not_allowed(path == "/tokenize" ? "/tokenize" : "/detokenize", "POST");
    return tokenize(req, *reply, path == "/detokenize");
  }
  if (path == "/v1/completions" || path == "/v1/chat/completions") {
    const char* route = path == "/v1/completions" ? "/v1/completions" : "/v1/chat/completions";
    if (req.method != "POST") return method_not_allowed(route, "POST");
    return generate(req, std::move(reply), path == "/v1/chat/completions");
  }
  api_error e;
  e.status = 404;
  e.code = "not_found";
  e.message = "no route " + path +
              " (routes: /v1/completions, /v1/chat/completions, /v1/models, /tokenize, /detokenize, /health, /metrics)";
  reply_error(*reply, e, "other");
}

void openai_service::tokenize(const http_request& req, reply_channel& reply, bool detokenize) {
  const char* route = detokenize ? "/detokenize" : "/tokenize";
  const model& m = engine_.get_model();
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    return reply_error(reply, bad_request("the body must be one JSON object"), route);
  if (body.contains("model") && body["model"].is_string() && !body["model"].get<std::string>().empty() &&
      body["model"] != opt_.model_name)
    return reply_error(reply, bad_request("this server serves \"" + opt_.model_name + "\"", "model", "model_not_found"),
                       route);
  json out;
  if (detokenize) {
    const json* t = body.contains("tokens") ? &body["tokens"] : nullptr;
    if (!t || !t->is_array()) return reply_error(reply, bad_request("tokens must be an array of token ids", "tokens"), route);
    std::vector<int32_t> ids;
    for (const auto& v : *t) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= m.vocab().n_vocab())
        return reply_error(reply,
                           bad_request("tokens must hold token ids from 0 to " + std::to_string(m.vocab().n_vocab() - 1) +
                                           ", got " + v.dump(),
                                       "tokens"),
                           route);
      ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
    }
    out = {{"prompt", m.vocab().decode(ids)}};
  } else {
    // A completions prompt (one string or token ids) or chat messages, checked as those routes do.
    const bool chat = body.contains("messages");
    for (const char* flag : {"add_special_tokens", "add_generation_prompt"})
      if (body.contains(flag) && !body[flag].is_boolean())
        return reply_error(reply, bad_request(std::string(flag) + " must be a boolean", flag), route);
    auto parsed = parse_generation_request(req.body, chat, opt_.defaults);
    if (auto* e = std::get_if<api_error>(&parsed)) return reply_error(reply, *e, route);
    generation_request& g = std::get<generation_request>(parsed);
    std::vector<int32_t> ids;
    if (chat) {
      const auto& tmpl = m.chat();
      if (!tmpl) return reply_error(reply, bad_request("the model has no usable chat template (" + tmpl.err().message + ")"), route);
      ids = encode_chat(m.vocab(), *tmpl, g.messages, body.value("add_generation_prompt", true));
    } else {
      if (g.prompts.size() != 1) return reply_error(reply, bad_request("prompt must be one prompt here", "prompt"), route);
      auto& p = g.prompts.front();
      ids = p.is_ids ? std::move(p.ids) : m.vocab().encode(p.text, body.value("add_special_tokens", true), true);
    }
    out = {{"count", ids.size()}, {"max_model_len", opt_.n_ctx}, {"tokens", ids}};
  }
  count_response(route, 200);
  reply.respond({200, "application/json", dump(out), {}});
}

void openai_service::generate(const http_request& req, std::shared_ptr<reply_channel> reply, bool chat) {
  const char* route = chat ? "/v1/chat/completions" : "/v1/completions";
  if (draining_.load()) {
    api_error e;
    e.status = 503;
    e.type = "server_error";
    e.code = "shutting_down";
    e.message = "the server is shutting down";
    return reply_error(*reply, e, route);
  }
  auto parsed = parse_generation_request(req.body, chat, opt_.defaults);
  if (auto* e = std::get_if<api_error>(&parsed)) return reply_error(*reply, *e, route);
  generation_request& g = std::get<generation_request>(parsed);
  if (!g.model.empty() && g.model != opt_.model_name) {
    api_error e;
    e.status = 404;
    e.code = "model_not_found";
    e.param = "model";
    e.message = "the model \"" + g.model + "\" does not exist; this server serves \"" + opt_.model_name + "\"";
    return reply_error(*reply, e, route);
  }

  const model& m = engine_.get_model();
  auto r = std::make_shared<response>();
  if (chat) {
    const auto& tmpl = m.chat();
    if (!tmpl) return reply_error(*reply, bad_request("the model has no usable chat template (" + tmpl.err().message +
                                                      "); use /v1/completions"),
                                  route);
    r->prompts.push_back(encode_chat(m.vocab(), *tmpl, g.messages, true));
  } else {
    for (auto& p : g.prompts) {
      // A raw completion prompt is the client's whole text, control tokens included (as OpenAI's
      // and llama.cpp's completion endpoints).
      if (g.echo) r->echo.push_back(p.is_ids ? m.vocab().decode(p.ids) : p.text);
      r->prompts.push_back(p.is_ids ? std::move(p.ids) : m.vocab().encode(p.text, true, true));
    }
  }
  // The runtime's admission rules (runtime/sched/admission: tokens in the vocabulary, prompt and
  // max_tokens within the window), answered with OpenAI's codes. An unset max_tokens is the
  // [sampling] default where it fits, else as much as the window holds.
  if (g.prompt_only) g.params.max_tokens = 1;  // one step, its token dropped: the prompt only
  for (size_t i = 0; i < r->prompts.size(); ++i) {
    const auto& prompt = r->prompts[i];
    int32_t asked = g.params.max_tokens;
    if (!g.max_tokens_set && asked >= 0 && prompt.size() + static_cast<size_t>(asked) > opt_.n_ctx) asked = -1;
    auto budget = admit_request(prompt, static_cast<uint32_t>(m.vocab().n_vocab()), opt_.n_ctx, asked);
    if (!budget) {
      const bool overflow = budget.err().code == errc::context_overflow;
      const bool prompt_fits = !prompt.empty() && prompt.size() < opt_.n_ctx;
      const char* param = g.max_tokens_set && prompt_fits ? "max_tokens" : (chat ? "messages" : "prompt");
      const std::string at = r->prompts.size() > 1 ? "prompt[" + std::to_string(i) + "]: " : "";
      return reply_error(*reply, bad_request(at + budget.err().message, param, overflow ? "context_length_exceeded" : ""),
                         route);
    }
    r->max_tokens.push_back(static_cast<int32_t>(*budget));
  }

  r->reply = reply;
  r->route = route;
  r->chat = chat;
  r->stream = g.stream;
  r->include_usage = g.include_usage;
  r->return_ids = g.return_token_ids;
  r->want_logprobs = g.params.logprobs >= 0;
  r->echo_logprobs = !chat && g.echo && r->want_logprobs;
  r->prompt_only = g.prompt_only;
  r->vllm_prompt = g.prompt_logprobs >= 0;
  r->echo_top = static_cast<size_t>(std::max(g.params.logprobs, 0));
  r->vllm_top = static_cast<size_t>(std::max(g.prompt_logprobs, 0));
  r->n = g.n;
  r->params = g.params;
  if (chat && g.tools.active()) r->tools = std::move(g.tools);
  r->prompt_tokens.assign(r->prompts.size(), 0);
  r->cached_tokens.assign(r->prompts.size(), 0);
  if (g.params.prompt_logprobs >= 0) r->prompt_ids = r->prompts;
  r->scored.resize(r->prompts.size());
  r->choices.resize(r->prompts.size() * g.n);
  if (r->want_logprobs)
    for (auto& c : r->choices) c.logprobs = empty_logprobs(chat);
  if (r->echo_logprobs)  // the generated tokens' offsets go on from the prompt's columns
    for (size_t i = 0; i < r->choices.size(); ++i) r->choices[i].text_offset = pieces_bytes(m.vocab(), r->prompt_ids[i / g.n]);
  char rid[40];
  std::snprintf(rid, sizeof rid, "%s-%016llx%04llx", chat ? "chatcmpl" : "cmpl",
                static_cast<unsigned long long>(created_), static_cast<unsigned long long>(next_response_++ & 0xFFFF));
  r->response_id = rid;
  in_flight_.fetch_add(1);
  std::weak_ptr<response> weak = r;
  reply->on_disconnect([this, weak] {
    auto rp = weak.lock();
    if (!rp) return;
    rp->gone = true;
    for (const auto& c : rp->choices)
      if (c.submitted && !c.finished) engine_.cancel(c.engine_id);  // frees its KV; the final event ends it
  });
  for (uint32_t i = 0; i < r->prompts.size(); ++i) submit_choice(r, i * r->n);
}

void openai_service::submit_choice(const std::shared_ptr<response>& r, uint32_t index) {
  const uint32_t p = index / r->n, j = index % r->n;
  sampling_params params = r->params;
  params.max_tokens = r->max_tokens[p];
  // A seeded request stays reproducible and its choices differ: choice j samples with seed + j
  // (0 means "random", so a sum that wraps to 0 takes 1).
  if (params.seed != 0 && j > 0) params.seed = params.seed + j == 0 ? 1 : params.seed + j;
  // The prompt is scored once, by its first choice; the others take its KV from the prefix cache.
  if (j > 0) params.prompt_logprobs = -1;
  const bool last = j + 1 == r->n;
  std::vector<int32_t> prompt = last ? std::move(r->prompts[p]) : r->prompts[p];
  choice& c = r->choices[index];
  c.engine_id = engine_.submit(std::move(prompt), params, [this](const actors::stream_event& e) {
    post_([this, e] { on_event(e.id, e); });
  });
  c.submitted = true;
  ++r->outstanding;
  live_.emplace(c.engine_id, choice_ref{r, index});
}

void openai_service::submit_rest(const std::shared_ptr<response>& r, uint32_t index) {
  if (index % r->n != 0 || r->gone || r->failed) return;
  for (uint32_t j = 1; j < r->n; ++j)
    if (!r->choices[index + j].submitted) submit_choice(r, index + j);
}

std::string openai_service::chunk(const response& r, uint32_t index, const std::string& text,
                                  const std::vector<int32_t>& ids, const char* finish_reason, const json* logprobs,
                                  const json* tool_calls) const {
  const choice& c = r.choices[index];
  json ch = {{"index", index}, {"logprobs", logprobs ? *logprobs : json(nullptr)},
             {"finish_reason", finish_reason ? json(finish_reason) : json(nullptr)}};
  if (r.chat) {
    json delta = json::object();
    if (!c.started) delta["role"] = "assistant";
    if (!text.empty() || (!c.started && !tool_calls)) delta["content"] = text;
    if (tool_calls) delta["tool_calls"] = *tool_calls;
    ch["delta"] = std::move(delta);
  } else {
    // echo: a choice's first chunk starts with its prompt.
    ch["text"] = !c.started && !r.echo.empty() ? r.echo[index / r.n] + text : text;
  }
  if (r.return_ids) ch["token_ids"] = ids;
  json out = {{"id", r.response_id}, {"object", r.chat ? "chat.completion.chunk" : "text_completion"},
              {"created", created_}, {"model", opt_.model_name}, {"choices", json::array({std::move(ch)})}};
  if (r.include_usage) out["usage"] = nullptr;
  return sse(dump(out));
}

void openai_service::on_event(uint64_t id, const actors::stream_event& e) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  const std::shared_ptr<response> rp = it->second.r;
  const uint32_t index = it->second.index;
  response& r = *rp;
  choice& c = r.choices[index];
  if (e.kind != static_cast<uint8_t>(actors::stream_kind::token)) {
    live_.erase(it);
    --r.outstanding;
    c.finished = true;
    if (!r.gone && !r.failed) {
      choice_done(r, index, e);
      submit_rest(rp, index);  // nothing when that failed the request
    }
    if (r.outstanding == 0) complete(r);
    return;
  }
  if (r.gone || r.failed) return;
  if (!e.prompt_logprobs.empty() && index % r.n == 0) r.scored[index / r.n] = e.prompt_logprobs;
  submit_rest(rp, index);
  const tokenizer& vocab = engine_.get_model().vocab();
  if (!r.stream) {
    if (r.prompt_only) return;
    c.text += e.text;
    c.ids.insert(c.ids.end(), e.tokens.begin(), e.tokens.end());
    if (r.want_logprobs) add_logprobs(vocab, e, r.chat, c.text_offset, c.logprobs);
    return;
  }
  if (!r.started) {
    r.reply->start_stream(200, "text/event-stream");
    count_response(r.route, 200);
    r.started = true;
  }
  if (r.prompt_only && c.started) return;  // nothing after the prompt
  // With tools the text may be a call: a named function's arguments stream as its call's
  // deltas, auto's content flows until a call may begin, required's array is read at the end.
  std::string tool_text;
  json call_delta;
  if (r.tools.active()) {
    c.text += e.text;
    if (r.tools.choice == tool_choice::automatic) {
      tool_text = c.filter.feed(e.text);
    } else if (r.tools.choice == tool_choice::named && !e.text.empty()) {
      const bool first = c.answer.calls.empty();
      if (first) c.answer.calls.push_back({r.tools.named, ""});
      call_delta = json::array({{{"index", 0}, {"function", {{"arguments", e.text}}}}});
      if (first) {
        call_delta = tool_calls_json(r.response_id, index, c.answer.calls, true);
        call_delta[0]["function"]["arguments"] = e.text;
      }
    }
  }
  const std::string& visible = r.tools.active() ? tool_text : e.text;
  if (visible.empty() && call_delta.is_null() && !r.return_ids && !r.want_logprobs && c.started)
    return;  // a partial UTF-8 character, or text held for a call: wait
  static const std::string none;
  static const std::vector<int32_t> no_ids;
  const std::string& text = r.prompt_only ? none : visible;
  const std::vector<int32_t>& ids = r.prompt_only ? no_ids : e.tokens;
  json lp;
  if (r.want_logprobs) {
    lp = empty_logprobs(r.chat);
    if (!r.prompt_only) add_logprobs(vocab, e, r.chat, c.text_offset, lp);
    // echo with logprobs: a choice's first chunk starts with its prompt's columns.
    if (r.echo_logprobs && !c.started)
      lp = prompt_columns(vocab, r.prompt_ids[index / r.n], r.scored[index / r.n], r.echo_top, lp);
  }
  r.reply->stream(chunk(r, index, text, ids, nullptr, r.want_logprobs ? &lp : nullptr,
                        call_delta.is_null() ? nullptr : &call_delta));
  c.started = true;
}

void openai_service::choice_done(response& r, uint32_t index, const actors::stream_event& e) {
  if (e.kind != static_cast<uint8_t>(actors::stream_kind::done)) return fail(r, e);
  choice& c = r.choices[index];
  c.finish_reason = r.prompt_only ? "length" : e.finish_reason;  // prompt only: max_tokens = 0 reached
  c.completion_tokens = r.prompt_only ? 0 : e.completion_tokens;
  if (r.tools.active()) {
    const bool streamed_named = r.stream && r.tools.choice == tool_choice::named;
    if (!streamed_named)
      c.answer = read_tool_answer(r.tools, r.stream && r.tools.choice == tool_choice::automatic ? c.filter.held() : c.text);
    // OpenAI: "tool_calls" when the model chose to call; a named function's call ends with "stop".
    if (!c.answer.calls.empty() && c.finish_reason == "stop" && r.tools.choice != tool_choice::named)
      c.finish_reason = "tool_calls";
  }
  r.prompt_tokens[index / r.n] = e.prompt_tokens;
  // The prompt's own cost: its first choice's hit (the others copy what that one computed).
  if (index % r.n == 0) r.cached_tokens[index / r.n] = e.cached_tokens;
  if (!r.stream) return;
  if (!r.started) {
    r.reply->start_stream(200, "text/event-stream");
    count_response(r.route, 200);
    r.started = true;
  }
  if (r.tools.active() && r.tools.choice != tool_choice::named) {
    // What was held: content, then the calls, each whole.
    const json calls = tool_calls_json(r.response_id, index, c.answer.calls, true);
    if (!c.answer.content.empty() || !calls.empty()) {
      r.reply->stream(chunk(r, index, c.answer.content, {}, nullptr, nullptr, calls.empty() ? nullptr : &calls));
      c.started = true;
    }
  }
  json lp;  // echo with logprobs: a choice that ends before any token chunk still sends its prompt's columns
  if (r.echo_logprobs && !c.started)
    lp = prompt_columns(engine_.get_model().vocab(), r.prompt_ids[index / r.n], r.scored[index / r.n], r.echo_top,
                        empty_logprobs(false));
  r.reply->stream(chunk(r, index, "", {}, c.finish_reason.c_str(), lp.is_null() ? nullptr : &lp));
  c.started = true;
}

void openai_service::fail(response& r, const actors::stream_event& e) {
  // One choice failed: the request fails (its other choices are cancelled, their events dropped).
  r.failed = true;
  for (const auto& c : r.choices)
    if (c.submitted && !c.finished) engine_.cancel(c.engine_id);
  const api_error err = from_engine_error(e.failure(), opt_.retry_after_s);
  if (!r.started) return reply_error(*r.reply, err, r.route);
  // Headers are out: the failure travels as an error event, then the stream ends.
  r.reply->stream(sse(err.body()));
  r.reply->stream(sse("[DONE]"));
  r.reply->end_stream();
}

void openai_service::complete(response& r) {
  in_flight_.fetch_sub(1);
  if (r.gone) return count_response(r.route, 499);  // client closed the connection (nginx's code)
  if (r.failed) return;                             // answered when it failed
  uint32_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  for (uint32_t t : r.prompt_tokens) prompt_tokens += t;
  for (uint32_t t : r.cached_tokens) cached_tokens += t;
  for (const auto& c : r.choices) completion_tokens += c.completion_tokens;
  if (r.stream) {
    if (r.include_usage) {
      json u = {{"id", r.response_id}, {"object", r.chat ? "chat.completion.chunk" : "text_completion"},
                {"created", created_}, {"model", opt_.model_name}, {"choices", json::array()},
                {"usage", usage_json(prompt_tokens, completion_tokens, cached_tokens)}};
      r.reply->stream(sse(dump(u)));
    }
    r.reply->stream(sse("[DONE]"));
    r.reply->end_stream();
    return;
  }
  const tokenizer& vocab = engine_.get_model().vocab();
  json choices = json::array();
  for (uint32_t i = 0; i < r.choices.size(); ++i) {
    const choice& c = r.choices[i];
    const uint32_t p = i / r.n;
    json lp = nullptr;
    if (r.want_logprobs)
      lp = r.echo_logprobs ? prompt_columns(vocab, r.prompt_ids[p], r.scored[p], r.echo_top, c.logprobs) : c.logprobs;
    json ch = {{"index", i}, {"logprobs", std::move(lp)}, {"finish_reason", c.finish_reason}};
    if (r.chat && r.tools.active() && !c.answer.calls.empty())
      ch["message"] = {{"role", "assistant"},
                       {"content", c.answer.content.empty() ? json(nullptr) : json(c.answer.content)},
                       {"tool_calls", tool_calls_json(r.response_id, i, c.answer.calls, false)}};
    else if (r.chat)
      ch["message"] = {{"role", "assistant"}, {"content", c.text}};
    else ch["text"] = r.echo.empty() ? c.text : r.echo[p] + c.text;
    if (r.return_ids) ch["token_ids"] = c.ids;
    if (r.vllm_prompt && !r.chat)
      ch["prompt_logprobs"] = vllm_prompt_logprobs(vocab, r.prompt_ids[p], r.scored[p], r.vllm_top);
    choices.push_back(std::move(ch));
  }
  json body = {{"id", r.response_id}, {"object", r.chat ? "chat.completion" : "text_completion"},
               {"created", created_}, {"model", opt_.model_name}, {"choices", std::move(choices)},
               {"usage", usage_json(prompt_tokens, completion_tokens, cached_tokens)}};
  if (r.vllm_prompt && r.chat) body["prompt_logprobs"] = vllm_prompt_logprobs(vocab, r.prompt_ids[0], r.scored[0], r.vllm_top);
  count_response(r.route, 200);
  r.reply->respond({200, "application/json", dump(body), {}});
}

void openai_service::cancel_all() {
  post_([this] {
    for (auto& [id, ref] : live_) engine_.cancel(id);
  });
}

std::string openai_service::metrics_text() {
  metrics_registry& reg = engine_.metrics();
  const auto& labels = engine_.metric_labels();
  alert_reading now;
  now.now_s = monotonic_s();
  now.draft_tokens = reg.counter(series::spec_decode_num_draft_tokens, labels).value();
  now.accepted_tokens = reg.counter(series::spec_decode_num_accepted_tokens, labels).value();
  now.ttft = reg.histogram(series::time_to_first_token, labels).read();
  now.tpot = reg.histogram(series::inter_token_latency, labels).read();
  now.prefill_to_decode = reg.histogram(series::prefill_to_decode_latency, labels).read();
  for (const alert_status& a : alerts_.evaluate(now)) {
    auto l = labels;
    l.push_back({"alert", a.name});
    reg.gauge(series::alerts_firing, l).set(a.firing ? 1 : 0);
  }
  return engine_.render_metrics();
}

}  // namespace fw::server
