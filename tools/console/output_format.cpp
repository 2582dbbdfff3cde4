#include "tools/console/output_format.hpp"

#include "tools/console/words.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>

namespace fw::console {
namespace {

/// TEXT, or the contents of FILE for @FILE.
expected<std::string> text_or_file(std::string_view what, std::string_view arg) {
  if (arg.empty()) return make_error(errc::invalid_argument, ":format " + std::string(what) + " needs its text or @FILE");
  if (arg.front() != '@') return std::string(arg);
  const std::string path(arg.substr(1));
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error(errc::invalid_argument, ":format " + std::string(what) + ": cannot read " + path);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (text.empty()) return make_error(errc::invalid_argument, ":format " + std::string(what) + ": " + path + " is empty");
  return text;
}

std::string shorten(std::string_view s) {
  size_t cut = std::min<size_t>(s.size(), 60);
  while (cut > 0 && cut < s.size() && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // whole UTF-8 characters
  std::string out(s.substr(0, cut));
  for (char& c : out)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return cut < s.size() ? out + "..." : out;
}

}  // namespace

expected<output_format> output_format::parse(std::string_view args) {
  const auto [kind, rest] = split_word(trim(args));
  output_format f;
  if (kind == "off" || kind == "text") {
    if (!rest.empty()) return make_error(errc::invalid_argument, ":format off takes nothing after it");
    return f;
  }
  if (kind == "json") {
    if (!rest.empty())
      return make_error(errc::invalid_argument, ":format json takes nothing after it (a schema: :format schema TEXT|@FILE)");
    f.constraint.json_object = true;
    f.description = "a JSON object";
  } else if (kind == "schema" || kind == "grammar") {
    auto text = text_or_file(kind, rest);
    if (!text) return text.err();
    (kind == "schema" ? f.constraint.json_schema : f.constraint.grammar) = *text;
    f.description = (kind == "schema" ? "JSON of the schema " : "a sentence of the grammar ") +
                    (rest.front() == '@' ? std::string(rest.substr(1)) : shorten(*text));
  } else if (kind == "regex") {
    if (rest.empty()) return make_error(errc::invalid_argument, ":format regex needs the expression");
    f.constraint.regex = std::string(rest);
    f.description = "a match of /" + shorten(rest) + "/";
  } else if (kind == "choice") {
    for (size_t at = 0; at <= rest.size();) {
      const size_t bar = std::min(rest.find('|', at), rest.size());
      f.constraint.choices.emplace_back(trim(rest.substr(at, bar - at)));
      at = bar + 1;
    }
    if (rest.empty() || f.constraint.choices.size() < 2)
      return make_error(errc::invalid_argument, ":format choice needs two or more choices, separated by |");
    for (const auto& c : f.constraint.choices)
      if (c.empty()) return make_error(errc::invalid_argument, ":format choice: an empty choice (two | in a row, or one at an end)");
    f.description = "one of " + std::to_string(f.constraint.choices.size()) + " choices: " + shorten(rest);
  } else {
    return make_error(errc::invalid_argument, "usage: :format off|json|schema TEXT|@FILE|grammar TEXT|@FILE|regex RE|"
                                              "choice A|B|... ('" + std::string(kind) + "' is none of these)");
  }
  if (auto ok = f.constraint.validate(); !ok) return ok.err();
  return f;
}

bool output_format::constrained() const {
  const sampling_params& c = constraint;
  return c.json_object || !c.json_schema.empty() || !c.grammar.empty() || !c.regex.empty() || !c.choices.empty();
}

void output_format::apply(sampling_params& p) const {
  if (!constrained()) return;
  p.json_object = constraint.json_object;
  p.json_schema = constraint.json_schema;
  p.grammar = constraint.grammar;
  p.regex = constraint.regex;
  p.choices = constraint.choices;
  p.max_draft_k = 0;
}

}  // namespace fw::console
