#include "tools/server/openai_request.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace fw::server {

namespace {

using json = nlohmann::json;

const char* kind(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a number with a fraction";
    default: return "an integer";
  }
}

// Each reader returns an error text, or empty when the field is absent or read.
struct reader {
  const json& body;
  std::optional<api_error> err;

  const json* field(const char* name) const {
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) return nullptr;
    return &*it;
  }
  void fail(std::string message, const char* param) {
    if (!err) err = bad_request(std::move(message), param);
  }

  void number(const char* name, float& out, double lo, double hi, bool lo_open, const char* range) {
    const json* v = field(name);
    if (!v) return;
    if (!v->is_number()) return fail(std::string(name) + " must be a number, got " + kind(*v), name);
    const double x = v->get<double>();
    if (!std::isfinite(x) || x > hi || (lo_open ? x <= lo : x < lo))
      return fail(std::string(name) + " = " + v->dump() + " is out of range; allowed: " + range, name);
    out = static_cast<float>(x);
  }

  bool integer(const char* name, int64_t& out, int64_t lo, int64_t hi, const char* range) {
    const json* v = field(name);
    if (!v) return false;
    if (!v->is_number_integer()) {
      fail(std::string(name) + " must be an integer, got " + (v->is_number() ? v->dump() : kind(*v)), name);
      return false;
    }
    if (v->is_number_unsigned() ? v->get<uint64_t>() > static_cast<uint64_t>(hi) : v->get<int64_t>() > hi) {
      fail(std::string(name) + " = " + v->dump() + " is out of range; allowed: " + range, name);
      return false;
    }
    const int64_t x = v->is_number_unsigned() ? static_cast<int64_t>(v->get<uint64_t>()) : v->get<int64_t>();
    if (x < lo) {
      fail(std::string(name) + " = " + v->dump() + " is out of range; allowed: " + range, name);
      return false;
    }
    out = x;
    return true;
  }

  void boolean(const char* name, bool& out) {
    const json* v = field(name);
    if (!v) return;
    if (!v->is_boolean()) return fail(std::string(name) + " must be a boolean, got " + kind(*v), name);
    out = v->get<bool>();
  }

  void refuse(const char* name, const char* why) {
    const json* v = field(name);
    if (!v) return;
    if ((v->is_boolean() && !v->get<bool>()) || (v->is_number_integer() && v->get<int64_t>() == 0) ||
        (v->is_array() && v->empty()))
      return;  // the "off" value of the feature is fine
    fail(std::string(name) + " is not supported by this server: " + why, name);
  }
};

std::optional<std::string> message_content(const json& content, std::string& error) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_array()) {
    std::string text;
    for (const json& part : content) {
      if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
        error = "each content part must be an object with a string \"type\"";
        return std::nullopt;
      }
      if (part["type"] != "text") {
        error = "content part type \"" + part["type"].get<std::string>() + "\" is not supported (only \"text\")";
        return std::nullopt;
      }
      if (!part.contains("text") || !part["text"].is_string()) {
        error = "a text content part needs a string \"text\"";
        return std::nullopt;
      }
      text += part["text"].get<std::string>();
    }
    return text;
  }
  error = std::string("content must be a string or an array of text parts, got ") + kind(content);
  return std::nullopt;
}

void read_messages(reader& r, generation_request& out) {
  const json* m = r.field("messages");
  if (!m) return r.fail("messages is required", "messages");
  if (!m->is_array()) return r.fail(std::string("messages must be an array, got ") + kind(*m), "messages");
  if (m->empty()) return r.fail("messages must not be empty", "messages");
  for (size_t i = 0; i < m->size(); ++i) {
    const json& msg = (*m)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object()) return r.fail(at + " must be an object, got " + kind(msg), "messages");
    if (!msg.contains("role") || !msg["role"].is_string()) return r.fail(at + ".role must be a string", "messages");
    std::string role = msg["role"].get<std::string>();
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      return r.fail(at + ".role \"" + msg["role"].get<std::string>() +
                        "\" is not supported; allowed: system, developer, user, assistant, tool",
                    "messages");
    // An assistant turn's earlier calls, written as the prompt shows calls (tool_calls.hpp).
    std::string calls;
    if (role == "assistant" && msg.contains("tool_calls") && !msg["tool_calls"].is_null()) {
      const json& tc = msg["tool_calls"];
      if (!tc.is_array()) return r.fail(at + ".tool_calls must be an array", "messages");
      for (size_t k = 0; k < tc.size(); ++k) {
        const json& c = tc[k];
        const json* fn = c.is_object() && c.contains("function") && c["function"].is_object() ? &c["function"] : nullptr;
        if (!fn || !fn->contains("name") || !(*fn)["name"].is_string() ||
            (fn->contains("arguments") && !(*fn)["arguments"].is_string()))
          return r.fail(at + ".tool_calls[" + std::to_string(k) +
                            "] must be {\"type\": \"function\", \"function\": {\"name\": string, \"arguments\": string}}",
                        "messages");
        if (!calls.empty()) calls += '\n';
        calls += tool_call_text((*fn)["name"].get<std::string>(), fn->value("arguments", std::string("{}")));
      }
    }
    if (!msg.contains("content") || msg["content"].is_null()) {
      if (calls.empty()) return r.fail(at + ".content is required", "messages");
      out.messages.push_back({std::move(role), std::move(calls)});
      continue;
    }
    std::string err;
    auto text = message_content(msg["content"], err);
    if (!text) return r.fail(at + ".content: " + err, "messages");
    if (role == "tool") {  // a tool's result: a user turn the model reads it in
      role = "user";
      *text = tool_result_text(*text);
    }
    if (!calls.empty()) *text = text->empty() ? std::move(calls) : *text + "\n" + calls;
    out.messages.push_back({std::move(role), std::move(*text)});
  }
}

// A JSON integer that is a token id (0 to 2^31 - 1).
bool is_token_id(const json& id) {
  return id.is_number_integer() && (id.is_number_unsigned() ? id.get<uint64_t>() <= uint64_t{INT32_MAX}
                                                            : id.get<int64_t>() >= 0 && id.get<int64_t>() <= INT32_MAX);
}

// A token-id array (one prompt) into `out`; false (and r.err set) when it holds anything else.
bool read_ids(reader& r, const json& a, const std::string& where, std::vector<int32_t>& out) {
  if (a.empty()) {
    r.fail(where + " is an empty token-id array", "prompt");
    return false;
  }
  for (const json& id : a) {
    if (!id.is_number_integer()) {
      r.fail(where + ": a token-id array holds integers only, got " + kind(id), "prompt");
      return false;
    }
    if (!is_token_id(id)) {
      r.fail(where + ": token id " + id.dump() + " is out of range", "prompt");
      return false;
    }
    out.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return true;
}

// prompt: a string, token ids, or a batch of strings / of token-id arrays (not mixed).
void read_prompt(reader& r, generation_request& out) {
  const json* p = r.field("prompt");
  if (!p) return r.fail("prompt is required", "prompt");
  if (p->is_string()) {
    out.prompts.push_back({p->get<std::string>(), {}, false});
    return;
  }
  if (!p->is_array()) return r.fail(std::string("prompt must be a string or an array, got ") + kind(*p), "prompt");
  if (p->empty()) return r.fail("prompt must not be an empty array", "prompt");
  const json& first = (*p)[0];
  if (first.is_number_integer()) {
    completion_prompt c;
    c.is_ids = true;
    if (read_ids(r, *p, "prompt", c.ids)) out.prompts.push_back(std::move(c));
    return;
  }
  if (!first.is_string() && !first.is_array())
    return r.fail(std::string("prompt: an array holds strings, token ids or token-id arrays, got ") + kind(first),
                  "prompt");
  // A batch: every element of the first one's kind.
  for (size_t i = 0; i < p->size(); ++i) {
    const json& x = (*p)[i];
    const std::string at = "prompt[" + std::to_string(i) + "]";
    if (first.is_string()) {
      if (!x.is_string()) return r.fail(at + ": a batch of strings holds strings only, got " + kind(x), "prompt");
      out.prompts.push_back({x.get<std::string>(), {}, false});
      continue;
    }
    if (!x.is_array())
      return r.fail(at + ": a batch of token-id arrays holds arrays only, got " + kind(x), "prompt");
    completion_prompt c;
    c.is_ids = true;
    if (!read_ids(r, x, at, c.ids)) return;
    out.prompts.push_back(std::move(c));
  }
}

void read_stop(reader& r, generation_request& out, size_t max_stop) {
  const json* s = r.field("stop");
  if (!s) return;
  std::vector<std::string> stops;
  if (s->is_string()) {
    stops.push_back(s->get<std::string>());
  } else if (s->is_array()) {
    if (s->size() > max_stop)
      return r.fail("stop has " + std::to_string(s->size()) + " strings; at most " + std::to_string(max_stop),
                    "stop");
    for (const json& x : *s) {
      if (!x.is_string()) return r.fail(std::string("stop must hold strings, got ") + kind(x), "stop");
      stops.push_back(x.get<std::string>());
    }
  } else {
    return r.fail(std::string("stop must be a string or an array of strings, got ") + kind(*s), "stop");
  }
  for (const auto& x : stops)
    if (x.empty()) return r.fail("stop strings must not be empty", "stop");
  out.params.stop = std::move(stops);
}

void read_sampling(reader& r, generation_request& out) {
  sampling_params& p = out.params;
  r.number("temperature", p.temperature, 0, 2, false, "0 to 2");
  r.number("top_p", p.top_p, 0, 1, true, "above 0, up to 1");
  r.number("min_p", p.min_p, 0, 1, false, "0 to 1");
  r.number("presence_penalty", p.presence_penalty, -2, 2, false, "-2 to 2");
  r.number("frequency_penalty", p.frequency_penalty, -2, 2, false, "-2 to 2");
  r.number("repetition_penalty", p.repeat_penalty, 0, 100, true, "above 0, up to 100");
  int64_t v = 0;
  if (r.integer("top_k", v, -1, 1 << 20, "-1 or 0 (off) up to 1048576")) p.top_k = v < 0 ? 0 : static_cast<int32_t>(v);
  constexpr int64_t max_gen = int64_t{1} << 20;
  // 0: the prompt only (completions with echo: scoring it); checked once echo is read.
  if (r.integer("max_tokens", v, out.chat ? 1 : 0, max_gen, "1 to 1048576 (and within the context window)")) {
    p.max_tokens = static_cast<int32_t>(v);
    out.max_tokens_set = true;
  }
  if (out.chat && r.integer("max_completion_tokens", v, 1, max_gen, "1 to 1048576 (and within the context window)")) {
    p.max_tokens = static_cast<int32_t>(v);
    out.max_tokens_set = true;
  }
  if (const json* s = r.field("seed")) {
    if (!s->is_number_integer() || (!s->is_number_unsigned() && s->get<int64_t>() < 0))
      r.fail("seed must be an integer from 0 to 18446744073709551615, got " + (s->is_number() ? s->dump() : kind(*s)),
             "seed");
    else
      p.seed = s->get<uint64_t>();
  }
  if (r.integer("max_draft_tokens", v, 0, 16, "0 (no speculation for this request) to 16"))
    p.max_draft_k = static_cast<int32_t>(v);
}

// logit_bias {"token id": bias}; vLLM's stop_token_ids, ignore_eos and min_tokens.
void read_token_controls(reader& r, generation_request& out, const parse_limits& limits) {
  sampling_params& p = out.params;
  if (const json* b = r.field("logit_bias")) {
    if (!b->is_object()) return r.fail(std::string("logit_bias must be an object, got ") + kind(*b), "logit_bias");
    if (b->size() > limits.max_logit_bias)
      return r.fail("logit_bias has " + std::to_string(b->size()) + " entries; at most " +
                        std::to_string(limits.max_logit_bias),
                    "logit_bias");
    for (const auto& [key, value] : b->items()) {
      const bool digits = !key.empty() && key.size() <= 10 &&
                          key.find_first_not_of("0123456789") == std::string::npos;
      const long long id = digits ? std::stoll(key) : -1;
      if (!digits || id > INT32_MAX)
        return r.fail("logit_bias: key \"" + key + "\" is not a token id (a decimal integer string)", "logit_bias");
      if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < -100 ||
          value.get<double>() > 100)
        return r.fail("logit_bias[\"" + key + "\"] = " + value.dump() + " is out of range; allowed: -100 to 100",
                      "logit_bias");
      p.logit_bias_ids.push_back(static_cast<int32_t>(id));
      p.logit_bias.push_back(static_cast<float>(value.get<double>()));
    }
  }
  if (const json* s = r.field("stop_token_ids")) {
    if (!s->is_array()) return r.fail(std::string("stop_token_ids must be an array, got ") + kind(*s), "stop_token_ids");
    if (s->size() > limits.max_stop_token_ids)
      return r.fail("stop_token_ids has " + std::to_string(s->size()) + " ids; at most " +
                        std::to_string(limits.max_stop_token_ids),
                    "stop_token_ids");
    for (const json& id : *s) {
      if (!is_token_id(id))
        return r.fail("stop_token_ids holds token ids (integers 0 to 2147483647), got " + id.dump(), "stop_token_ids");
      p.stop_token_ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
  }
  r.boolean("ignore_eos", p.ignore_eos);
  int64_t v = 0;
  if (r.integer("min_tokens", v, 0, int64_t{1} << 20, "0 to 1048576")) p.min_tokens = static_cast<int32_t>(v);
}

// Completions: logprobs = N (alternatives per token). Chat: logprobs = true, top_logprobs = N.
void read_logprobs(reader& r, generation_request& out, int cap) {
  const std::string range = "0 to " + std::to_string(cap);
  int64_t v = 0;
  if (!out.chat) {
    if (r.integer("logprobs", v, 0, cap, range.c_str())) out.params.logprobs = static_cast<int32_t>(v);
    if (r.field("top_logprobs")) r.fail("top_logprobs belongs to chat completions; here logprobs = N", "top_logprobs");
    return;
  }
  bool on = false;
  r.boolean("logprobs", on);
  const bool has_top = r.integer("top_logprobs", v, 0, cap, range.c_str());
  if (has_top && !on) return r.fail("top_logprobs needs logprobs = true", "top_logprobs");
  if (on) out.params.logprobs = has_top ? static_cast<int32_t>(v) : 0;
}

// The raw text of the value at `path` (object keys, or "#N" for an array's element N) in a valid
// JSON text: the client's own text, its objects' key order kept, found in one linear pass (an
// ordered document of the whole body would cost time quadratic in an object's keys). The last
// of duplicate keys wins, as in the parsed body.
class value_finder {
 public:
  explicit value_finder(std::string_view s) : s_(s) {}
  std::optional<std::string_view> find(const std::vector<std::string>& path) {
    i_ = s_.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;  // a byte order mark, as the JSON parser allows
    found_.reset();
    value(path, 0, true);
    return found_;
  }

 private:
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  std::string string_token() {  // at '"': the decoded text
    const size_t start = i_++;
    bool escaped = false;
    while (i_ < s_.size() && s_[i_] != '"') i_ += s_[i_] == '\\' ? (escaped = true, 2) : 1;
    ++i_;
    const std::string_view raw = s_.substr(start, std::min(i_, s_.size()) - start);
    if (!escaped) return std::string(raw.substr(1, raw.size() >= 2 ? raw.size() - 2 : 0));
    const json k = json::parse(raw, nullptr, false);
    return k.is_string() ? k.get<std::string>() : std::string();
  }
  // Reads one value; records its text when it is the path's end (`on` says the path holds so far).
  void value(const std::vector<std::string>& path, size_t k, bool on) {
    ws();
    const size_t start = i_;
    if (i_ >= s_.size()) return;
    if (s_[i_] == '{') {
      ++i_;
      for (;;) {
        ws();
        if (i_ >= s_.size() || s_[i_] == '}') break;
        const std::string key = string_token();
        ws();
        ++i_;  // ':'
        value(path, k + 1, on && k < path.size() && key == path[k]);
        ws();
        if (i_ < s_.size() && s_[i_] == ',') ++i_;
      }
      ++i_;
    } else if (s_[i_] == '[') {
      ++i_;
      for (size_t n = 0;; ++n) {
        ws();
        if (i_ >= s_.size() || s_[i_] == ']') break;
        value(path, k + 1, on && k < path.size() && path[k] == "#" + std::to_string(n));
        ws();
        if (i_ < s_.size() && s_[i_] == ',') ++i_;
      }
      ++i_;
    } else if (s_[i_] == '"') {
      string_token();
    } else {
      while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ']' && s_[i_] != ' ' && s_[i_] != '\n' &&
             s_[i_] != '\t' && s_[i_] != '\r')
        ++i_;
    }
    if (on && k == path.size()) found_ = s_.substr(start, std::min(i_, s_.size()) - start);
  }

  std::string_view s_;
  size_t i_ = 0;
  std::optional<std::string_view> found_;
};

// OpenAI's tools, tool_choice and parallel_tool_calls (chat; tool_calls.hpp says how they are
// answered). Read after the other constraints: a tool_choice that calls fixes the answer's form.
void read_tools(reader& r, std::string_view body, generation_request& out) {
  tool_spec& spec = out.tools;
  r.boolean("parallel_tool_calls", spec.parallel);
  const json* tools = r.field("tools");
  if (tools) {
    if (!tools->is_array()) return r.fail(std::string("tools must be an array, got ") + kind(*tools), "tools");
    if (tools->size() > 128)
      return r.fail("tools lists " + std::to_string(tools->size()) + " functions; at most 128", "tools");
    value_finder finder(body);
    for (size_t i = 0; i < tools->size(); ++i) {
      const json& t = (*tools)[i];
      const std::string at = "tools[" + std::to_string(i) + "]";
      const json* fn = t.is_object() && t.contains("function") && t["function"].is_object() ? &t["function"] : nullptr;
      if (!fn || !t.contains("type") || t["type"] != "function")
        return r.fail(at + " must be {\"type\": \"function\", \"function\": {\"name\": ..., \"parameters\": {...}}}",
                      "tools");
      tool_function f;
      if (fn->contains("name") && (*fn)["name"].is_string()) f.name = (*fn)["name"].get<std::string>();
      if (f.name.empty() || f.name.size() > 64 ||
          f.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos)
        return r.fail(at + ".function.name must be 1 to 64 letters, digits, '_' or '-'", "tools");
      for (const auto& g : spec.functions)
        if (g.name == f.name) return r.fail(at + ": the function " + f.name + " is listed twice", "tools");
      if (fn->contains("description") && !(*fn)["description"].is_null()) {
        if (!(*fn)["description"].is_string()) return r.fail(at + ".function.description must be a string", "tools");
        f.description = (*fn)["description"].get<std::string>();
      }
      if (fn->contains("strict") && !(*fn)["strict"].is_null() && !(*fn)["strict"].is_boolean())
        return r.fail(at + ".function.strict must be a boolean", "tools");
      if (fn->contains("parameters") && !(*fn)["parameters"].is_null()) {
        if (!(*fn)["parameters"].is_object()) return r.fail(at + ".function.parameters must be a JSON schema object", "tools");
        // The schema's own text keeps its properties' order (the order the arguments are written in).
        const auto text = finder.find({"tools", "#" + std::to_string(i), "function", "parameters"});
        f.parameters = text ? std::string(*text) : (*fn)["parameters"].dump();
        if (auto g = json_schema_grammar(f.parameters); !g)
          return r.fail(at + ".function.parameters: " + g.err().message, "tools");
      }
      spec.functions.push_back(std::move(f));
    }
  }
  spec.choice = spec.functions.empty() ? tool_choice::none : tool_choice::automatic;
  if (const json* c = r.field("tool_choice")) {
    if (c->is_string() && (*c == "none" || *c == "auto" || *c == "required")) {
      if (*c == "none") spec.choice = tool_choice::none;
      else if (*c == "required") spec.choice = tool_choice::required;
    } else if (c->is_object() && c->contains("type") && (*c)["type"] == "function" && c->contains("function") &&
               (*c)["function"].is_object() && (*c)["function"].contains("name") && (*c)["function"]["name"].is_string()) {
      spec.choice = tool_choice::named;
      spec.named = (*c)["function"]["name"].get<std::string>();
      if (std::none_of(spec.functions.begin(), spec.functions.end(), [&](const tool_function& f) { return f.name == spec.named; }))
        return r.fail("tool_choice names the function \"" + spec.named + "\", which tools does not list", "tool_choice");
    } else {
      return r.fail("tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": "
                    "{\"name\": ...}}",
                    "tool_choice");
    }
    if (spec.choice == tool_choice::required && spec.functions.empty())
      return r.fail("tool_choice \"required\" needs tools", "tool_choice");
  }
  if (!spec.active()) return;
  sampling_params& p = out.params;
  // auto reads calls from whatever the answer is (a constraint may shape it); required and a
  // named function constrain the answer themselves.
  const bool calls = spec.choice == tool_choice::named || spec.choice == tool_choice::required;
  if (calls && (p.json_object || !p.json_schema.empty() || !p.regex.empty() || !p.choices.empty() || !p.grammar.empty()))
    return r.fail("tool_choice \"required\" or a named function constrains the answer itself: it cannot be combined "
                  "with response_format json_object / json_schema or guided decoding",
                  "tool_choice");
  // The functions and the call syntax, in the system message.
  const std::string prompt = tool_prompt(spec);
  if (!out.messages.empty() && out.messages.front().role == "system")
    out.messages.front().content += "\n\n" + prompt;
  else
    out.messages.insert(out.messages.begin(), chat_message{"system", prompt});
  if (calls) {
    if (p.min_tokens > 0)
      return r.fail("min_tokens cannot be combined with a tool_choice that calls (the answer ends with its call)",
                    "min_tokens");
    p.json_schema = tool_answer_schema(spec);
    p.max_draft_k = 0;
  }
}

}  // namespace

parse_result parse_generation_request(std::string_view body, bool chat, const sampling_params& defaults,
                                      const parse_limits& limits) {
  if (body.empty()) return bad_request("the request body is empty; expected a JSON object");
  bool too_deep = false;
  json doc;
  try {
    doc = json::parse(
        body.begin(), body.end(),
        [&](int depth, json::parse_event_t, json&) {
          if (depth > limits.max_depth) too_deep = true;
          return !too_deep;  // stop building (and growing) the tree once too deep
        },
        true, false);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number overflow (1e999)
    std::string what = e.what();
    if (const auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    return bad_request("the request body is not valid JSON: " + what);
  }
  if (too_deep) return bad_request("the request body nests deeper than " + std::to_string(limits.max_depth) + " levels");
  if (!doc.is_object()) return bad_request(std::string("the request body must be a JSON object, got ") + kind(doc));

  generation_request out;
  out.chat = chat;
  out.params = defaults;
  reader r{doc, std::nullopt};
  if (const json* m = r.field("model")) {
    if (!m->is_string()) r.fail(std::string("model must be a string, got ") + kind(*m), "model");
    else out.model = m->get<std::string>();
  }
  if (chat) read_messages(r, out);
  else read_prompt(r, out);
  read_sampling(r, out);
  read_stop(r, out, limits.max_stop);
  r.boolean("stream", out.stream);
  r.boolean("return_token_ids", out.return_token_ids);
  if (const json* so = r.field("stream_options")) {
    if (!so->is_object()) {
      r.fail(std::string("stream_options must be an object, got ") + kind(*so), "stream_options");
    } else if (!out.stream) {
      r.fail("stream_options is only allowed when stream is true", "stream_options");
    } else if (so->contains("include_usage") && !(*so)["include_usage"].is_null()) {
      if (!(*so)["include_usage"].is_boolean())
        r.fail("stream_options.include_usage must be a boolean", "stream_options");
      else
        out.include_usage = (*so)["include_usage"].get<bool>();
    }
  }
  read_logprobs(r, out, limits.max_logprobs);
  read_token_controls(r, out, limits);
  if (!r.err && out.max_tokens_set && out.params.min_tokens > out.params.max_tokens)
    r.fail("min_tokens = " + std::to_string(out.params.min_tokens) + " is above max_tokens = " +
               std::to_string(out.params.max_tokens),
           "min_tokens");
  int64_t n = 1;
  const std::string choices = "1 to " + std::to_string(limits.max_choices) + " (choices per prompt)";
  if (r.integer("n", n, 1, limits.max_choices, choices.c_str())) out.n = static_cast<uint32_t>(n);
  // best_of = n returns every sample drawn; ranking more samples than are returned is not built.
  int64_t best_of = 0;
  if (r.integer("best_of", best_of, 1, limits.max_choices, choices.c_str()) && best_of != 1 &&
      best_of != static_cast<int64_t>(out.n))
    r.fail("best_of = " + std::to_string(best_of) + " with n = " + std::to_string(out.n) +
               " is not supported (returning the best n of more samples is not built); send best_of = n or omit it",
           "best_of");
  const size_t prompts = chat ? 1 : std::max<size_t>(1, out.prompts.size());
  if (!r.err && prompts * out.n > limits.max_choices)
    r.fail(std::to_string(prompts) + " prompts x n = " + std::to_string(out.n) + " asks for " +
               std::to_string(prompts * out.n) + " choices; at most " + std::to_string(limits.max_choices) +
               " per request",
           prompts > 1 ? "prompt" : "n");
  if (chat) {
    r.refuse("echo", "send the prompt back yourself");
  } else {
    r.boolean("echo", out.echo);
    if (out.max_tokens_set && out.params.max_tokens == 0) {
      if (!out.echo) r.fail("max_tokens = 0 returns the prompt only and needs echo = true; else send 1 to 1048576", "max_tokens");
      out.prompt_only = true;
    }
  }
  // vLLM's prompt_logprobs (not with stream, as vLLM), and echo with logprobs: the prompt scored.
  const std::string lp_range = "0 to " + std::to_string(limits.max_logprobs);
  int64_t plp = 0;
  if (r.field("prompt_logprobs") && !r.field("prompt_logprobs")->is_null() &&
      r.integer("prompt_logprobs", plp, 0, limits.max_logprobs, lp_range.c_str())) {
    out.prompt_logprobs = static_cast<int32_t>(plp);
    if (out.stream) r.fail("prompt_logprobs is not available with stream = true", "prompt_logprobs");
  }
  out.params.prompt_logprobs = out.prompt_logprobs;
  if (out.echo && out.params.logprobs >= 0)
    out.params.prompt_logprobs = std::max(out.params.prompt_logprobs, out.params.logprobs);
  r.refuse("suffix", "no fill-in-the-middle");
  if (!chat) {
    r.refuse("tools", "tools belong to /v1/chat/completions");
    r.refuse("tool_choice", "tools belong to /v1/chat/completions");
  }
  r.refuse("functions", "the legacy functions field is not built; send tools and tool_choice");
  r.refuse("function_call", "the legacy function_call field is not built; send tools and tool_choice");
  // A GBNF grammar: vLLM's guided_grammar, llama.cpp's grammar (gbnf_grammar.hpp).
  for (const char* field : {"guided_grammar", "grammar"}) {
    const json* gg = r.field(field);
    if (!gg) continue;
    if (!gg->is_string() || gg->get_ref<const std::string&>().empty()) {
      r.fail(std::string(field) + " must be a non-empty string (a GBNF grammar with a rule root)", field);
    } else if (!out.params.grammar.empty()) {
      r.fail("a grammar is given twice (guided_grammar and grammar)", field);
    } else if (auto g = gbnf_grammar(gg->get<std::string>()); !g) {
      r.fail(g.err().message, field);
    } else {
      out.params.grammar = gg->get<std::string>();
      out.params.max_draft_k = 0;
    }
  }
  if (const json* gr = r.field("guided_regex"); gr && !gr->is_null()) {
    if (!gr->is_string() || gr->get_ref<const std::string&>().empty()) {
      r.fail("guided_regex must be a non-empty string", "guided_regex");
    } else if (auto g = regex_grammar(gr->get<std::string>()); !g) {
      r.fail(g.err().message, "guided_regex");
    } else {
      out.params.regex = gr->get<std::string>();
      out.params.max_draft_k = 0;
    }
  }
  // A JSON schema: response_format json_schema (OpenAI) or guided_json (vLLM: a schema object or its text).
  // The schema's own text keeps its properties' order (the order the answer writes them): it is
  // read again from the body as an ordered document.
  auto take_schema = [&](const json& schema, const char* field, std::vector<std::string> where) {
    if (!out.params.json_schema.empty()) return r.fail("a JSON schema is given twice (response_format and guided_json)", field);
    if (schema.is_string()) {
      out.params.json_schema = schema.get<std::string>();
    } else if (schema.is_object() || schema.is_boolean()) {
      const auto text = value_finder(body).find(where);
      out.params.json_schema = text ? std::string(*text) : schema.dump();
    } else {
      return r.fail("a JSON schema must be an object", field);
    }
    if (auto g = json_schema_grammar(out.params.json_schema); !g) r.fail(g.err().message, field);
    out.params.max_draft_k = 0;
  };
  if (const json* gj = r.field("guided_json"); gj && !gj->is_null()) take_schema(*gj, "guided_json", {"guided_json"});
  if (const json* gc = r.field("guided_choice"); gc && !gc->is_null()) {
    // vLLM's guided_choice: the answer is exactly one of these strings; decoded plainly.
    if (!gc->is_array() || gc->empty() || gc->size() > 256)
      r.fail("guided_choice must be an array of 1 to 256 strings", "guided_choice");
    else
      for (const auto& c : *gc) {
        if (!c.is_string() || c.get_ref<const std::string&>().empty() || c.get_ref<const std::string&>().size() > 4096) {
          r.fail("guided_choice must hold non-empty strings (up to 4096 bytes each)", "guided_choice");
          break;
        }
        out.params.choices.push_back(c.get<std::string>());
      }
    out.params.max_draft_k = 0;
  }
  if (const json* rf = r.field("response_format")) {
    const json* type = rf->is_object() && rf->contains("type") ? &(*rf)["type"] : nullptr;
    if (type && *type == "json_object") {
      out.params.json_object = true;  // every token continues a JSON object; plain decoding
      out.params.max_draft_k = 0;
    } else if (type && *type == "json_schema") {
      // {"type": "json_schema", "json_schema": {"name", "schema", "strict", "description"}}
      const json* js = rf->contains("json_schema") ? &(*rf)["json_schema"] : nullptr;
      if (!js || !js->is_object() || !js->contains("schema"))
        r.fail("response_format json_schema needs {\"json_schema\": {\"name\": ..., \"schema\": {...}}}", "response_format");
      else if (js->contains("strict") && !(*js)["strict"].is_null() && !(*js)["strict"].is_boolean())
        r.fail("response_format json_schema's strict must be a boolean", "response_format");
      else
        take_schema((*js)["schema"], "response_format", {"response_format", "json_schema", "schema"});
    } else if (!type || *type != "text") {
      r.fail("response_format is not supported by this server (only {\"type\": \"text\"}, {\"type\": "
             "\"json_object\"} and {\"type\": \"json_schema\"})",
             "response_format");
    }
  }
  if (chat && !r.err) read_tools(r, body, out);
  if (r.err) return *r.err;
  if (auto ok = out.params.validate(); !ok) return bad_request(ok.err().message);
  return out;
}

}  // namespace fw::server
