#include "runtime/sample/json_schema.hpp"
#include "runtime/sample/grammar_recognizer.hpp"
#include "runtime/sample/regex_grammar.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fw {
namespace {

using ojson = nlohmann::ordered_json;
using element = grammar::element;
using seq = std::vector<element>;

const std::set<std::string, std::less<>> annotation_keys = {
    "title",   "description", "default",  "examples", "format",    "$schema",      "$id",
    "$comment", "$defs",      "definitions", "deprecated", "readOnly", "writeOnly", "discriminator"};
const std::set<std::string, std::less<>> structural_keys = {
    "type",     "properties", "required", "additionalProperties", "items",     "prefixItems", "minItems",
    "maxItems", "enum",       "const",    "anyOf",                "oneOf",     "allOf",       "$ref",
    "minLength", "maxLength", "pattern"};
constexpr int max_schema_depth = 64;
constexpr int max_json_depth = 128;  // of the schema's JSON text (const / enum values included)
constexpr size_t max_object_keys = 4096;  // keys in one object of the schema's JSON text
constexpr size_t max_grammar_elements = 2'000'000;

std::string pointer_token(const std::string& key) {  // RFC 6901 escaping
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

class compiler {
 public:
  explicit compiler(const ojson& document) : doc_(document) {}

  expected<uint32_t> value(const ojson& s, const std::string& path, int depth);
  grammar g;

 private:
  error fail(const std::string& path, const std::string& what) const {
    return make_error(errc::invalid_argument, "json_schema at " + (path.empty() ? std::string("/") : path) + ": " + what);
  }
  uint32_t rule_of(const std::vector<seq>& alternatives) {
    const uint32_t r = g.add_rule();
    for (const auto& a : alternatives) g.add_alternative(r, a);
    return r;
  }
  seq lit(std::string_view text) {
    seq out;
    g.literal(text, out);
    return out;
  }
  static seq cat(std::initializer_list<seq> parts) {
    seq out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  }

  uint32_t ws();
  uint32_t digits(int up_to);  // 0..up_to digits
  uint32_t number(bool integer_only);
  uint32_t escape();
  uint32_t character();  // one character of a string's text
  uint32_t string(int64_t min, int64_t max);  // max < 0: unbounded
  uint32_t any_value();
  /// The texts as one rule, a prefix tree (an enum of a thousand strings is one way at a time).
  uint32_t literals(std::vector<std::string> texts);
  /// Whether value v has one of the types `type` names ("integer" takes whole numbers).
  static bool of_type(const ojson& v, const ojson& type);

  expected<uint32_t> typed(const ojson& s, const std::string& type, const std::string& path, int depth);
  expected<uint32_t> object(const ojson& s, const std::string& path, int depth);
  expected<uint32_t> array(const ojson& s, const std::string& path, int depth);
  expected<uint32_t> reference(const std::string& ref, const std::string& path, int depth);
  expected<int64_t> bound(const ojson& s, const char* key, const std::string& path) const;

  const ojson& doc_;
  std::map<std::string, uint32_t> refs_;
  std::map<std::pair<int64_t, int64_t>, uint32_t> strings_;
  uint32_t ws_ = UINT32_MAX, any_ = UINT32_MAX, escape_ = UINT32_MAX, char_ = UINT32_MAX, number_ = UINT32_MAX, integer_ = UINT32_MAX;
  std::map<int, uint32_t> digits_;
};

uint32_t compiler::ws() {
  if (ws_ != UINT32_MAX) return ws_;
  // Nothing, one space, or a line break and an indent of spaces or tabs (what formatted JSON has;
  // a model under sampling would otherwise wander into blank lines).
  const element indent = g.bytes(byte_set{}.add_all(" \t"));
  // (Empty alternatives go last, as in grammar::at_most.)
  const uint32_t r = g.at_most(indent, json_schema_max_whitespace);
  return ws_ = rule_of({lit(" "), seq{g.byte('\n'), grammar::ref(r)}, seq{}});
}

uint32_t compiler::digits(int up_to) {
  if (auto it = digits_.find(up_to); it != digits_.end()) return it->second;
  return digits_[up_to] = g.at_most(g.bytes(byte_set{}.add_range('0', '9')), up_to);
}

uint32_t compiler::number(bool integer_only) {
  uint32_t& cached = integer_only ? integer_ : number_;
  if (cached != UINT32_MAX) return cached;
  const element digit = g.bytes(byte_set{}.add_range('0', '9'));
  const uint32_t minus = rule_of({lit("-"), seq{}});
  const uint32_t whole = rule_of({lit("0"), seq{g.bytes(byte_set{}.add_range('1', '9')), grammar::ref(digits(14))}});
  if (integer_only) return cached = rule_of({seq{grammar::ref(minus), grammar::ref(whole)}});
  const uint32_t frac = rule_of({seq{g.byte('.'), digit, grammar::ref(digits(15))}, seq{}});
  const uint32_t sign = rule_of({seq{g.bytes(byte_set{}.add_all("+-"))}, seq{}});
  const uint32_t exp = rule_of({seq{g.bytes(byte_set{}.add_all("eE")), grammar::ref(sign), digit, grammar::ref(digits(1))}, seq{}});
  return cached = rule_of({seq{grammar::ref(minus), grammar::ref(whole), grammar::ref(frac), grammar::ref(exp)}});
}

uint32_t compiler::escape() {
  if (escape_ != UINT32_MAX) return escape_;
  const element hex = g.bytes(byte_set{}.add_range('0', '9').add_range('a', 'f').add_range('A', 'F'));
  // \uXXXX but not a surrogate (D800-DFFF): a pair would count as two characters and a lone one
  // is not a character (strict parsers refuse it); a model writes such characters as UTF-8.
  const element not_d = g.bytes(byte_set{}.add_range('0', '9').add_range('a', 'c').add_range('A', 'C').add_all("efEF"));
  return escape_ = rule_of({seq{g.byte('\\'), g.bytes(byte_set{}.add_all("\"\\/bfnrt"))},
                            seq{g.byte('\\'), g.byte('u'), not_d, hex, hex, hex},
                            seq{g.byte('\\'), g.byte('u'), g.bytes(byte_set{}.add_all("dD")), g.bytes(byte_set{}.add_range('0', '7')), hex, hex}});
}

uint32_t compiler::character() {
  if (char_ != UINT32_MAX) return char_;
  // Printable ASCII but '"' and '\\', an escape, or a whole UTF-8 character.
  char_ = rule_of({seq{g.bytes(byte_set{}.add_range(0x20, 0x7f).remove('"').remove('\\'))}, seq{grammar::ref(escape())}});
  g.add_utf8_multibyte(char_);
  return char_;
}

uint32_t compiler::string(int64_t min, int64_t max) {
  if (auto it = strings_.find({min, max}); it != strings_.end()) return it->second;
  const element quote = g.byte('"');
  const uint32_t ch = character();
  // body_i: i characters written. Built from the last: body_max closes; unbounded, body_min loops.
  const int64_t last = max < 0 ? min : max;
  uint32_t next = UINT32_MAX;
  for (int64_t i = last; i >= 0; --i) {
    const uint32_t r = g.add_rule();
    if (i >= min) g.add_alternative(r, {quote});
    const uint32_t after = (max < 0 && i == last) ? r : next;
    if (max < 0 || i < max) g.add_alternative(r, {grammar::ref(ch), grammar::ref(after)});
    next = r;
  }
  return strings_[{min, max}] = rule_of({seq{quote, grammar::ref(next)}});
}

uint32_t compiler::literals(std::vector<std::string> texts) {
  std::sort(texts.begin(), texts.end());
  texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
  // node(lo, hi, depth): the texts [lo, hi) share their first `depth` bytes; one alternative per
  // next byte (or the end of a text), each leading on through the common prefix of the texts
  // with that byte (recursion as deep as the branch points, not the bytes).
  auto node = [&](auto&& self, size_t lo, size_t hi, size_t depth) -> uint32_t {
    const uint32_t r = g.add_rule();
    size_t i = lo;
    const bool ends_here = texts[i].size() == depth;  // sorted: a text that ends here comes first
    if (ends_here) ++i;
    while (i < hi) {
      const char b = texts[i][depth];
      size_t j = i;
      while (j < hi && texts[j][depth] == b) ++j;
      if (j - i == 1) {  // a single text: the rest of it as a literal
        g.add_alternative(r, lit(std::string_view(texts[i]).substr(depth)));
      } else {  // the group's common prefix as a literal (sorted: the first and last bound it), then a node
        size_t l = depth;
        while (l < texts[i].size() && l < texts[j - 1].size() && texts[i][l] == texts[j - 1][l]) ++l;
        seq alt = lit(std::string_view(texts[i]).substr(depth, l - depth));
        alt.push_back(grammar::ref(self(self, i, j, l)));
        g.add_alternative(r, alt);
      }
      i = j;
    }
    if (ends_here) g.add_alternative(r, {});  // last: see ws()
    return r;
  };
  return node(node, 0, texts.size(), 0);
}

bool compiler::of_type(const ojson& v, const ojson& type) {
  auto one = [&](const std::string& t) {
    return (t == "string" && v.is_string()) || (t == "number" && v.is_number()) ||
           (t == "integer" && (v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>())))) ||
           (t == "boolean" && v.is_boolean()) || (t == "null" && v.is_null()) || (t == "object" && v.is_object()) ||
           (t == "array" && v.is_array());
  };
  if (type.is_string()) return one(type.get<std::string>());
  if (type.is_array())
    for (const auto& t : type)
      if (t.is_string() && one(t.get<std::string>())) return true;
  return false;
}

uint32_t compiler::any_value() {
  if (any_ != UINT32_MAX) return any_;
  any_ = g.add_rule();
  const element w = grammar::ref(ws()), v = grammar::ref(any_), s = grammar::ref(string(0, -1));
  const uint32_t members = g.add_rule();
  g.add_alternative(members, cat({{w}, lit("}")}));
  g.add_alternative(members, cat({{w}, lit(","), {w, s, w}, lit(":"), {w, v, grammar::ref(members)}}));
  const uint32_t obj = rule_of({cat({lit("{"), {w}, lit("}")}), cat({lit("{"), {w, s, w}, lit(":"), {w, v, grammar::ref(members)}})});
  const uint32_t items = g.add_rule();
  g.add_alternative(items, cat({{w}, lit("]")}));
  g.add_alternative(items, cat({{w}, lit(","), {w, v, grammar::ref(items)}}));
  const uint32_t arr = rule_of({cat({lit("["), {w}, lit("]")}), cat({lit("["), {w, v, grammar::ref(items)}})});
  for (const seq& alt : {seq{grammar::ref(obj)}, seq{grammar::ref(arr)}, seq{s}, seq{grammar::ref(number(false))},
                         lit("true"), lit("false"), lit("null")})
    g.add_alternative(any_, alt);
  return any_;
}

expected<int64_t> compiler::bound(const ojson& s, const char* key, const std::string& path) const {
  if (!s.contains(key)) return int64_t{-1};
  const ojson& v = s[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > json_schema_max_bound)
    return fail(path + "/" + key, std::string(key) + " must be an integer from 0 to " + std::to_string(json_schema_max_bound));
  return v.get<int64_t>();
}

expected<uint32_t> compiler::reference(const std::string& ref, const std::string& path, int depth) {
  if (auto it = refs_.find(ref); it != refs_.end()) return it->second;
  if (ref.empty() || ref[0] != '#') return fail(path + "/$ref", "only references into this schema (\"#...\") are supported, not \"" + ref + "\"");
  const ojson* target = &doc_;
  if (ref.size() > 1) {
    try {
      const ojson::json_pointer ptr(ref.substr(1));
      if (!doc_.contains(ptr)) return fail(path + "/$ref", "\"" + ref + "\" names nothing in the schema");
      target = &doc_.at(ptr);
    } catch (const std::exception&) {
      return fail(path + "/$ref", "\"" + ref + "\" is not a JSON pointer (\"#/$defs/Name\")");
    }
  }
  const uint32_t r = g.add_rule();  // made before its body: a recursive reference finds it
  refs_[ref] = r;
  auto body = value(*target, ref.substr(1), depth + 1);
  if (!body) return body.err();
  g.add_alternative(r, {grammar::ref(*body)});
  return r;
}

expected<uint32_t> compiler::value(const ojson& s, const std::string& path, int depth) {
  if (depth > max_schema_depth) return fail(path, "nested deeper than " + std::to_string(max_schema_depth) + " schemas");
  if (g.size() > max_grammar_elements) return fail(path, "the schema's grammar is too large");
  if (s.is_boolean()) {
    if (!s.get<bool>()) return fail(path, "the schema false admits no value");
    return any_value();
  }
  if (!s.is_object()) return fail(path, "a schema must be an object or a boolean");
  for (const auto& [key, v] : s.items()) {
    if (annotation_keys.count(key) || structural_keys.count(key)) continue;
    return fail(path, "keyword \"" + key + "\" is not supported (supported: type, properties, required, "
                      "additionalProperties, items, prefixItems, minItems, maxItems, minLength, maxLength, pattern, enum, "
                      "const, anyOf, oneOf, allOf, $ref, and annotations)");
  }
  if (s.contains("$ref")) {
    for (const auto& [key, v] : s.items())
      if (key != "$ref" && structural_keys.count(key))
        return fail(path, "\"" + key + "\" beside $ref is not supported");
    if (!s["$ref"].is_string()) return fail(path + "/$ref", "$ref must be a string");
    return reference(s["$ref"].get<std::string>(), path, depth);
  }
  if (s.contains("const") || s.contains("enum")) {
    // The values the keyword names, those of the type beside it (if any): a prefix tree of their texts.
    std::vector<std::string> texts;
    if (s.contains("const")) {
      texts.push_back(s["const"].dump(-1, ' ', false));  // (length bounds beside it are not checked)
    } else {
      const ojson& e = s["enum"];
      if (!e.is_array() || e.empty()) return fail(path + "/enum", "enum must be a non-empty array");
      for (const auto& v : e)
        if (!s.contains("type") || of_type(v, s["type"])) texts.push_back(v.dump(-1, ' ', false));
    }
    if (s.contains("const") && s.contains("type") && !of_type(s["const"], s["type"])) texts.clear();
    if (texts.empty()) return fail(path, "no value of enum / const has the type beside it");
    return literals(texts);
  }
  for (const char* combiner : {"anyOf", "oneOf", "allOf"}) {
    if (!s.contains(combiner)) continue;
    const std::string at = path + "/" + combiner;
    const ojson& list = s[combiner];
    if (!list.is_array() || list.empty()) return fail(at, std::string(combiner) + " must be a non-empty array of schemas");
    for (const auto& [key, v] : s.items())
      if (key != combiner && structural_keys.count(key))
        return fail(path, "\"" + key + "\" beside " + combiner + " is not supported");
    if (std::string_view(combiner) == "allOf" && list.size() != 1)
      return fail(at, "allOf with more than one schema is not supported");
    std::vector<seq> alts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto r = value(list[i], at + "/" + std::to_string(i), depth + 1);
      if (!r) return r.err();
      alts.push_back({grammar::ref(*r)});
    }
    return rule_of(alts);
  }
  if (s.contains("type")) {
    const ojson& t = s["type"];
    if (t.is_string()) return typed(s, t.get<std::string>(), path, depth);
    if (!t.is_array() || t.empty()) return fail(path + "/type", "type must be a type name or a non-empty array of them");
    std::vector<seq> alts;
    for (const auto& name : t) {
      if (!name.is_string()) return fail(path + "/type", "type must be a type name or a non-empty array of them");
      auto r = typed(s, name.get<std::string>(), path, depth);
      if (!r) return r.err();
      alts.push_back({grammar::ref(*r)});
    }
    return rule_of(alts);
  }
  // No type: what its keywords describe, else any value.
  if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required"))
    return object(s, path, depth);
  if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") || s.contains("maxItems"))
    return array(s, path, depth);
  if (s.contains("minLength") || s.contains("maxLength") || s.contains("pattern")) return typed(s, "string", path, depth);
  return any_value();
}

expected<uint32_t> compiler::typed(const ojson& s, const std::string& type, const std::string& path, int depth) {
  if (type == "object") return object(s, path, depth);
  if (type == "array") return array(s, path, depth);
  if (type == "string") {
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) return fail(path + "/pattern", "pattern must be a string");
      if (s.contains("minLength") || s.contains("maxLength"))
        return fail(path, "pattern together with minLength / maxLength is not supported");
      auto body = add_regex(g, s["pattern"].get<std::string>(), regex_target::json_string, true);
      if (!body) return fail(path + "/pattern", body.err().message);
      return rule_of({seq{g.byte('"'), grammar::ref(*body), g.byte('"')}});
    }
    auto lo = bound(s, "minLength", path), hi = bound(s, "maxLength", path);
    if (!lo) return lo.err();
    if (!hi) return hi.err();
    if (*hi >= 0 && *lo > *hi) return fail(path, "minLength is above maxLength");
    return string(std::max<int64_t>(*lo, 0), *hi);
  }
  if (type == "number") return number(false);
  if (type == "integer") return number(true);
  if (type == "boolean") return rule_of({lit("true"), lit("false")});
  if (type == "null") return rule_of({lit("null")});
  return fail(path + "/type", "unknown type \"" + type + "\" (object, array, string, number, integer, boolean, null)");
}

expected<uint32_t> compiler::object(const ojson& s, const std::string& path, int depth) {
  const element w = grammar::ref(ws());
  struct member {
    std::string key;
    uint32_t value;
    bool required;
  };
  std::vector<member> members;
  std::set<std::string> required;
  if (s.contains("required")) {
    const ojson& r = s["required"];
    if (!r.is_array()) return fail(path + "/required", "required must be an array of property names");
    for (const auto& k : r) {
      if (!k.is_string()) return fail(path + "/required", "required must be an array of property names");
      required.insert(k.get<std::string>());
    }
  }
  std::set<std::string> declared;
  if (s.contains("properties")) {
    const ojson& props = s["properties"];
    if (!props.is_object()) return fail(path + "/properties", "properties must be an object of schemas");
    for (const auto& [key, sub] : props.items()) {
      auto r = value(sub, path + "/properties/" + pointer_token(key), depth + 1);
      if (!r) return r.err();
      members.push_back({key, *r, required.count(key) > 0});
      declared.insert(key);
    }
  }
  const ojson* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
  if (extra && !extra->is_boolean() && !extra->is_object())
    return fail(path + "/additionalProperties", "additionalProperties must be a boolean or a schema");
  for (const auto& k : required) {
    if (declared.count(k)) continue;
    if (extra && extra->is_boolean() && !extra->get<bool>())
      return fail(path + "/required", "\"" + k + "\" is required but not a property, and additionalProperties is false");
    auto r = extra && extra->is_object() ? value(*extra, path + "/additionalProperties", depth + 1) : expected<uint32_t>(any_value());
    if (!r) return r.err();
    members.push_back({k, *r, true});
  }
  if (members.empty() && !(extra && extra->is_boolean() && !extra->get<bool>())) {
    // A map: any keys, each value of additionalProperties' schema (any value without one).
    auto v = extra && extra->is_object() ? value(*extra, path + "/additionalProperties", depth + 1) : expected<uint32_t>(any_value());
    if (!v) return v.err();
    const element s_ = grammar::ref(string(0, -1)), val = grammar::ref(*v);
    const uint32_t more = g.add_rule();
    g.add_alternative(more, cat({{w}, lit("}")}));
    g.add_alternative(more, cat({{w}, lit(","), {w, s_, w}, lit(":"), {w, val, grammar::ref(more)}}));
    return rule_of({cat({lit("{"), {w}, lit("}")}), cat({lit("{"), {w, s_, w}, lit(":"), {w, val, grammar::ref(more)}})});
  }
  // rest[i][f]: members i.. with f = whether one was written already (a comma goes first).
  const size_t n = members.size();
  std::vector<std::array<uint32_t, 2>> rest(n + 1);
  rest[n][0] = rule_of({lit("}")});
  rest[n][1] = rule_of({cat({{w}, lit("}")})});
  for (size_t i = n; i-- > 0;) {
    const member& m = members[i];
    const seq kv = cat({lit(ojson(m.key).dump(-1, ' ', false)), {w}, lit(":"), {w, grammar::ref(m.value)}});
    for (int f = 0; f < 2; ++f) {
      std::vector<seq> alts;
      alts.push_back(cat({f ? cat({{w}, lit(","), {w}}) : seq{}, kv, {grammar::ref(rest[i + 1][1])}}));
      if (!m.required) alts.push_back({grammar::ref(rest[i + 1][f])});
      rest[i][f] = rule_of(alts);
    }
  }
  return rule_of({cat({lit("{"), {w, grammar::ref(rest[0][0])}})});
}

expected<uint32_t> compiler::array(const ojson& s, const std::string& path, int depth) {
  const element w = grammar::ref(ws());
  std::vector<uint32_t> prefix;
  if (s.contains("prefixItems")) {
    const ojson& p = s["prefixItems"];
    if (!p.is_array()) return fail(path + "/prefixItems", "prefixItems must be an array of schemas");
    for (size_t i = 0; i < p.size(); ++i) {
      auto r = value(p[i], path + "/prefixItems/" + std::to_string(i), depth + 1);
      if (!r) return r.err();
      prefix.push_back(*r);
    }
  }
  bool more_allowed = true;
  uint32_t item = UINT32_MAX;
  if (s.contains("items") && s["items"].is_boolean() && !s["items"].get<bool>()) {
    more_allowed = false;
  } else {
    auto r = s.contains("items") ? value(s["items"], path + "/items", depth + 1) : expected<uint32_t>(any_value());
    if (!r) return r.err();
    item = *r;
  }
  auto lo = bound(s, "minItems", path), hi = bound(s, "maxItems", path);
  if (!lo) return lo.err();
  if (!hi) return hi.err();
  int64_t min = std::max<int64_t>(*lo, 0), max = *hi;
  if (!more_allowed) max = max < 0 ? static_cast<int64_t>(prefix.size()) : std::min<int64_t>(max, static_cast<int64_t>(prefix.size()));
  if (max >= 0 && min > max) return fail(path, "no array length satisfies minItems, maxItems and the items allowed");
  // after[i]: i items written. Unbounded, the states past the prefix and the minimum loop.
  const int64_t loop_at = std::max<int64_t>({min, static_cast<int64_t>(prefix.size()), 1});
  const int64_t last = max < 0 ? loop_at : max;
  std::vector<uint32_t> after(static_cast<size_t>(last + 1));
  for (int64_t i = last; i >= 0; --i) after[static_cast<size_t>(i)] = g.add_rule();
  for (int64_t i = 0; i <= last; ++i) {
    const uint32_t r = after[static_cast<size_t>(i)];
    if (i >= min) g.add_alternative(r, i == 0 ? lit("]") : cat({{w}, lit("]")}));
    if (max >= 0 && i >= max) continue;
    const uint32_t next = (max < 0 && i == last) ? r : after[static_cast<size_t>(i + 1)];
    const uint32_t this_item = i < static_cast<int64_t>(prefix.size()) ? prefix[static_cast<size_t>(i)] : item;
    g.add_alternative(r, cat({i == 0 ? seq{} : cat({{w}, lit(","), {w}}), {grammar::ref(this_item), grammar::ref(next)}}));
  }
  return rule_of({cat({lit("["), {w, grammar::ref(after[0])}})});
}

}  // namespace

expected<std::shared_ptr<const grammar>> json_schema_grammar(std::string_view schema_json) {
  ojson doc;
  bool too_deep = false, too_wide = false;
  std::vector<size_t> keys;  // per open object: its keys so far (an ordered object's insert is linear)
  try {
    doc = ojson::parse(
        schema_json.begin(), schema_json.end(),
        [&](int depth, ojson::parse_event_t e, ojson&) {
          if (depth > max_json_depth) too_deep = true;
          if (e == ojson::parse_event_t::object_start) keys.push_back(0);
          else if (e == ojson::parse_event_t::object_end && !keys.empty()) keys.pop_back();
          else if (e == ojson::parse_event_t::key && !keys.empty() && ++keys.back() > max_object_keys) too_wide = true;
          return !too_deep && !too_wide;  // stop building deeper values (their dump() would recurse as deep)
        },
        true, false);
  } catch (const std::exception& e) {
    return make_error(errc::invalid_argument, std::string("json_schema is not valid JSON: ") + e.what());
  }
  if (too_deep)
    return make_error(errc::invalid_argument, "json_schema nests deeper than " + std::to_string(max_json_depth) + " levels");
  if (too_wide)
    return make_error(errc::invalid_argument, "json_schema has an object of more than " + std::to_string(max_object_keys) +
                                                  " keys");
  compiler c(doc);
  auto root = c.value(doc, "", 0);
  if (!root) return root.err();
  c.g.set_root(*root);
  auto g = std::make_shared<grammar>(std::move(c.g));
  if (g->left_recursive_rule() >= 0)
    return make_error(errc::invalid_argument, "json_schema: a part reaches itself before writing anything (a $ref "
                                              "that is only a reference to itself, a pattern like (a*)*)");
  if (grammar_recognizer(g).start_failed())
    return make_error(errc::invalid_argument, "json_schema: its grammar nests too deep to start (optional parts "
                                              "within optional parts)");
  return std::shared_ptr<const grammar>(std::move(g));
}

}  // namespace fw
