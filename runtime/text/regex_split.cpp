#include "runtime/text/regex_split.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>

namespace fw {
namespace {

// A Unicode category as llama.cpp's collapsed std::regex sees it: the byte standing for the
// category's non-ASCII members and a class body listing its ASCII members.
struct collapsed_category {
  std::string_view name;
  std::string_view byte;
  std::string_view ascii;
};

// \p{Lu}..\p{Lo} all mean "letter" there (llama.cpp's k_ucat_enum); \p{M} has no ASCII members.
constexpr std::array<collapsed_category, 10> categories = {{
    {"\\p{N}", "\\xD1", "0-9"},
    {"\\p{L}", "\\xD2", "A-Za-z"},
    {"\\p{P}", "\\xD3", "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}"},
    {"\\p{M}", "\\xD4", ""},
    {"\\p{S}", "\\xD5", "\\$\\+<->\\^`\\|~"},
    {"\\p{Lu}", "\\xD2", "A-Za-z"},
    {"\\p{Ll}", "\\xD2", "A-Za-z"},
    {"\\p{Lt}", "\\xD2", "A-Za-z"},
    {"\\p{Lm}", "\\xD2", "A-Za-z"},
    {"\\p{Lo}", "\\xD2", "A-Za-z"},
}};

const collapsed_category* category_at(std::string_view pattern, size_t i) {
  for (const auto& c : categories) {
    if (pattern.substr(i, c.name.size()) == c.name) return &c;
  }
  return nullptr;
}

bool uses_categories(std::string_view pattern) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (category_at(pattern, i)) return true;
  }
  return false;
}

// Rewrites each \p{X} into its collapsed class (inside a [...] only the members are inserted).
std::string collapse_pattern(std::string_view p) {
  std::string out;
  bool inside = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const bool escaped = i > 0 && p[i - 1] == '\\';
    if (p[i] == '[' && !escaped) {
      inside = true;
    } else if (p[i] == ']' && inside && !escaped) {
      inside = false;
    } else if (const collapsed_category* c = category_at(p, i)) {
      if (!inside) out += '[';
      out += c->byte;
      out += c->ascii;
      if (!inside) out += ']';
      i += c->name.size() - 1;
      continue;
    }
    out += p[i];
  }
  return out;
}

uint8_t collapsed_byte(uint32_t cpt, codepoint_flags f) {
  if (cpt < 128) return static_cast<uint8_t>(cpt);
  if (f.is_whitespace()) return 0x0B;  // std::regex's \s does not know non-ASCII spaces
  if (f.is_number()) return 0xD1;
  if (f.is_letter()) return 0xD2;
  if (f.is_punctuation()) return 0xD3;
  if (f.is_mark()) return 0xD4;
  if (f.is_symbol()) return 0xD5;
  return 0xD0;
}

}  // namespace

struct regex_split::compiled {
  pcre2_code* code = nullptr;
  ~compiled() { pcre2_code_free(code); }
};

expected<regex_split> regex_split::compile(std::string_view pattern) {
  regex_split r;
  r.pattern_ = std::string(pattern);
  r.collapsed_ = uses_categories(pattern);
  std::string source = r.collapsed_ ? collapse_pattern(pattern) : r.pattern_;
  // Collapsed: one byte per code point, no UTF. Otherwise UTF-8 without UCP, so \s is ASCII as in
  // std::wregex; MATCH_INVALID_UTF lets surrogate code points (which llama.cpp's decoder lets
  // through) sit in the subject, matching nothing, as no pattern class here contains them.
  uint32_t options = PCRE2_DOLLAR_ENDONLY;
  if (!r.collapsed_) options |= PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  auto c = std::make_shared<compiled>();
  c->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(), options, &err,
                          &err_offset, nullptr);
  if (!c->code) {
    std::array<PCRE2_UCHAR, 256> msg{};
    pcre2_get_error_message(err, msg.data(), msg.size());
    return make_error(errc::invalid_argument, "regex '" + r.pattern_ + "' at offset " +
                                                  std::to_string(err_offset) + ": " +
                                                  reinterpret_cast<const char*>(msg.data()));
  }
  uint32_t min_length = 0;
  pcre2_pattern_info(c->code, PCRE2_INFO_MINLENGTH, &min_length);
  if (min_length == 0)
    return make_error(errc::invalid_argument, "regex '" + r.pattern_ + "' can match the empty string");
  pcre2_jit_compile(c->code, PCRE2_JIT_COMPLETE);  // failure (no JIT here) keeps the interpreter
  r.code_ = std::move(c);
  return r;
}

std::vector<size_t> regex_split::split(std::span<const uint32_t> cpts,
                                       std::span<const codepoint_flags> flags,
                                       const std::vector<size_t>& pieces) const {
  // The subject and, for UTF-8, the byte offset of every code point (one past the end last).
  std::string subject;
  std::vector<size_t> byte_of;
  subject.reserve(cpts.size());
  byte_of.reserve(cpts.size() + 1);
  for (size_t i = 0; i < cpts.size(); ++i) {
    byte_of.push_back(subject.size());
    if (collapsed_) {
      subject.push_back(static_cast<char>(collapsed_byte(cpts[i], flags[i])));
    } else {
      append_utf8(subject, cpts[i] >= 128 && flags[i].is_whitespace() ? 0x0B : cpts[i]);
    }
  }
  byte_of.push_back(subject.size());
  auto cpt_at = [&](size_t byte) {
    return static_cast<size_t>(std::lower_bound(byte_of.begin(), byte_of.end(), byte) - byte_of.begin());
  };

  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), &pcre2_match_data_free);
  std::vector<size_t> out;
  out.reserve(pieces.size() * 2);
  size_t start = 0;
  for (size_t len : pieces) {
    const size_t b0 = byte_of[start];
    const size_t b1 = byte_of[start + len];
    const auto* base = reinterpret_cast<PCRE2_SPTR>(subject.data() + b0);
    size_t last = start;  // code point where the text not yet emitted begins
    size_t offset = 0;    // byte offset inside the piece where the next search starts
    while (offset < b1 - b0) {
      // Errors other than "no match" (resource limits) end the piece like no further match.
      if (pcre2_match(code_->code, base, b1 - b0, offset, 0, md.get(), nullptr) < 0) break;
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
      const size_t m0 = cpt_at(b0 + ov[0]);
      const size_t m1 = cpt_at(b0 + ov[1]);
      if (m1 == m0) break;  // cannot happen: compile() rejects patterns with empty matches
      if (m0 > last) out.push_back(m0 - last);
      out.push_back(m1 - m0);
      last = m1;
      offset = ov[1];
    }
    if (start + len > last) out.push_back(start + len - last);
    start += len;
  }
  return out;
}

}  // namespace fw
