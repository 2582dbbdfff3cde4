#include "tools/server/tool_calls.hpp"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

namespace fw::server {

namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view call_open = "<tool_call>";
constexpr std::string_view call_close = "</tool_call>";

// Model text or a client's schema; a value nested deeper than 64 levels is not read (dump()
// and the walks below recurse).
ojson parse(std::string_view text) {
  bool too_deep = false;
  ojson v = ojson::parse(
      text.begin(), text.end(),
      [&](int depth, ojson::parse_event_t, ojson&) {
        if (depth > 64) too_deep = true;
        return !too_deep;
      },
      false);
  return too_deep ? ojson(ojson::value_t::discarded) : v;
}

// A schema moved from the document's root to `at` (a JSON pointer): its "#..." references
// follow it (values of const / enum / default / examples are data, not schemas).
void move_refs(ojson& schema, const std::string& at) {
  if (schema.is_array()) {
    for (auto& v : schema) move_refs(v, at);
    return;
  }
  if (!schema.is_object()) return;
  for (auto& [key, v] : schema.items()) {
    if (key == "const" || key == "enum" || key == "default" || key == "examples") continue;
    if (key == "$ref" && v.is_string() && v.get_ref<const std::string&>().rfind('#', 0) == 0)
      v = "#" + at + v.get<std::string>().substr(1);
    else
      move_refs(v, at);
  }
}

ojson parameters_of(const tool_function& f) {
  ojson p = parse(f.parameters.empty() ? no_parameters_schema : std::string_view(f.parameters));
  return p.is_discarded() ? parse(no_parameters_schema) : p;
}

const tool_function* find_function(const tool_spec& spec, std::string_view name) {
  for (const auto& f : spec.functions)
    if (f.name == name) return &f;
  return nullptr;
}

std::string_view trim(std::string_view s) {
  const auto ws = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

// One call's JSON object {"name", "arguments"} (or "parameters"), naming a listed function; the
// arguments an object or a string holding one.
std::optional<tool_call> read_call(const tool_spec& spec, const ojson& o) {
  if (!o.is_object() || !o.contains("name") || !o["name"].is_string()) return std::nullopt;
  const std::string name = o["name"].get<std::string>();
  if (!find_function(spec, name)) return std::nullopt;
  ojson args = ojson::object();
  if (o.contains("arguments")) args = o["arguments"];
  else if (o.contains("parameters")) args = o["parameters"];
  if (args.is_string()) args = parse(args.get<std::string>());
  if (!args.is_object()) return std::nullopt;
  return tool_call{name, args.dump()};
}

// The texts of the whole values of a JSON array, which may be cut short after any of them.
std::vector<std::string_view> array_items(std::string_view text) {
  std::vector<std::string_view> items;
  size_t p = 0;
  while (p < text.size() && (text[p] == ' ' || text[p] == '\n' || text[p] == '\r' || text[p] == '\t')) ++p;
  if (p == text.size() || text[p] != '[') return items;
  int depth = 0;
  bool in_string = false;
  size_t start = std::string_view::npos;
  for (++p; p < text.size(); ++p) {
    const char c = text[p];
    if (in_string) {
      if (c == '\\') ++p;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') {
      if (depth++ == 0) start = p;
    } else if (c == '}' || c == ']') {
      if (depth == 0) break;  // the array's end
      if (--depth == 0) items.push_back(text.substr(start, p + 1 - start));
    }
  }
  return items;
}

}  // namespace

std::string tool_prompt(const tool_spec& spec) {
  std::string s = "You can call functions to answer. Each line between <tools> and </tools> describes one, as JSON:\n<tools>\n";
  for (const auto& f : spec.functions) {
    ojson fn = {{"name", f.name}};
    if (!f.description.empty()) fn["description"] = f.description;
    fn["parameters"] = parameters_of(f);
    s += ojson({{"type", "function"}, {"function", std::move(fn)}}).dump();
    s += '\n';
  }
  s += "</tools>\n";
  switch (spec.choice) {
    case tool_choice::named:
      s += "Answer by calling " + spec.named + ": write its arguments as one JSON object.";
      break;
    case tool_choice::required:
      s += spec.parallel ? "Answer by calling one or more of these functions: write a JSON array of calls, each "
                           "{\"name\": <function name>, \"arguments\": <its arguments as a JSON object>}."
                         : "Answer by calling one of these functions: write a JSON array holding one call, "
                           "{\"name\": <function name>, \"arguments\": <its arguments as a JSON object>}.";
      break;
    default:
      s += "To call a function, write a JSON object with its name and arguments between <tool_call> and "
           "</tool_call>, like this:\n<tool_call>\n{\"name\": <function name>, \"arguments\": <its arguments as a JSON "
           "object>}\n</tool_call>";
      break;
  }
  return s;
}

std::string tool_answer_schema(const tool_spec& spec) {
  if (spec.choice == tool_choice::named) {
    const tool_function* f = find_function(spec, spec.named);
    return f ? parameters_of(*f).dump() : std::string();
  }
  if (spec.choice != tool_choice::required || spec.functions.empty()) return {};
  ojson any = ojson::array();
  const bool one = spec.functions.size() == 1;
  for (size_t i = 0; i < spec.functions.size(); ++i) {
    // Each function's parameters sit below the array's items: their references move with them.
    ojson params = parameters_of(spec.functions[i]);
    move_refs(params, one ? "/items/properties/arguments" : "/items/anyOf/" + std::to_string(i) + "/properties/arguments");
    any.push_back({{"type", "object"},
                   {"properties", {{"name", {{"const", spec.functions[i].name}}}, {"arguments", std::move(params)}}},
                   {"required", {"name", "arguments"}},
                   {"additionalProperties", false}});
  }
  ojson items = one ? any[0] : ojson{{"anyOf", std::move(any)}};
  ojson schema = {{"type", "array"}, {"items", std::move(items)}, {"minItems", 1}};
  if (!spec.parallel) schema["maxItems"] = 1;
  return schema.dump();
}

tool_answer read_tool_answer(const tool_spec& spec, std::string_view text) {
  tool_answer a;
  switch (spec.choice) {
    case tool_choice::named: {
      const std::string_view args = trim(text);
      if (!args.empty()) a.calls.push_back({spec.named, std::string(args)});
      return a;
    }
    case tool_choice::required: {
      // The array's whole items: all of it, or the calls before a cut (max_tokens).
      for (const std::string_view item : array_items(text)) {
        auto c = read_call(spec, parse(item));
        if (!c) {
          a.calls.clear();
          break;
        }
        a.calls.push_back(std::move(*c));
      }
      if (a.calls.empty()) a.content = std::string(text);
      return a;
    }
    case tool_choice::automatic: {
      std::string content;
      size_t pos = 0;
      while (pos < text.size()) {
        const size_t open = text.find(call_open, pos);
        if (open == std::string_view::npos) {
          content += text.substr(pos);
          break;
        }
        content += text.substr(pos, open - pos);
        const size_t body = open + call_open.size();
        const size_t close = text.find(call_close, body);
        const size_t end = close == std::string_view::npos ? text.size() : close + call_close.size();
        const std::string_view inner = text.substr(body, (close == std::string_view::npos ? text.size() : close) - body);
        if (auto c = read_call(spec, parse(trim(inner)))) a.calls.push_back(std::move(*c));
        else content += text.substr(open, end - open);  // not a call: it stays text
        pos = end;
      }
      if (!spec.parallel && a.calls.size() > 1) a.calls.resize(1);  // parallel_tool_calls = false: the first
      a.content = a.calls.empty() ? std::string(text) : std::string(trim(content));
      return a;
    }
    case tool_choice::none: break;
  }
  a.content = std::string(text);
  return a;
}

std::string tool_call_text(std::string_view name, std::string_view arguments) {
  ojson args = parse(arguments);
  if (args.is_discarded()) args = std::string(arguments);
  return std::string(call_open) + "\n" + ojson({{"name", std::string(name)}, {"arguments", std::move(args)}}).dump() + "\n" +
         std::string(call_close);
}

std::string tool_result_text(std::string_view content) {
  return "<tool_response>\n" + std::string(content) + "\n</tool_response>";
}

std::string tool_stream_filter::feed(std::string_view text) {
  held_ += text;
  if (in_call_) return {};
  std::string out;
  if (const size_t p = held_.find(call_open); p != std::string::npos) {
    out = held_.substr(0, p);
    held_.erase(0, p);
    in_call_ = true;
    return out;
  }
  // Hold the longest suffix that "<tool_call>" starts with.
  size_t keep = 0;
  for (size_t k = std::min(held_.size(), call_open.size() - 1); k > 0; --k)
    if (call_open.substr(0, k) == std::string_view(held_).substr(held_.size() - k)) {
      keep = k;
      break;
    }
  out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

}  // namespace fw::server
