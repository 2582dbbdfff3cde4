#include "runtime/text/pre_tokenizer.hpp"

#include <array>
#include <cstdlib>
#include <initializer_list>

#include "runtime/text/regex_split.hpp"
#include "runtime/text/unicode_text.hpp"

namespace fw {
namespace {

constexpr uint32_t out_of_range = 0xFFFFFFFF;

// The text being split: code points plus their precomputed categories.
struct split_input {
  std::span<const uint32_t> cpts;
  std::vector<codepoint_flags> flags;
};

// Walks one piece [ini, end) of the input and records word boundaries; mirrors the helper lambdas
// (_get_cpt, _get_flags, _add_token) of llama.cpp's custom splitters.
class piece_cursor {
 public:
  piece_cursor(const split_input& in, size_t ini, size_t end, std::vector<size_t>& out)
      : in_(in), ini_(ini), end_(end), prev_end_(ini), out_(out) {}

  uint32_t cpt(size_t pos) const { return (pos >= ini_ && pos < end_) ? in_.cpts[pos] : out_of_range; }
  codepoint_flags flags(size_t pos) const {
    return (pos >= ini_ && pos < end_) ? in_.flags[pos] : codepoint_flags{};
  }
  size_t end() const { return end_; }

  /// Closes the current word at `end`; returns its length (0 adds nothing).
  size_t add_token(size_t end) {
    size_t len = end - prev_end_;
    if (len > 0) out_.push_back(len);
    prev_end_ = end;
    return len;
  }

 private:
  const split_input& in_;
  size_t ini_, end_, prev_end_;
  std::vector<size_t>& out_;
};

template <class Fn>
std::vector<size_t> for_each_piece(const split_input& in, const std::vector<size_t>& pieces, Fn fn) {
  std::vector<size_t> out;
  out.reserve(pieces.size() * 2);
  size_t start = 0;
  for (size_t len : pieces) {
    piece_cursor cur(in, start, start + len, out);
    fn(cur, start, start + len);
    start += len;
  }
  return out;
}

bool is_not_space_letter_number(codepoint_flags f) {
  return !(f.is_whitespace() || f.is_letter() || f.is_number()) && !f.empty();
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
std::vector<size_t> split_gpt2(const split_input& in, const std::vector<size_t>& pieces) {
  return for_each_piece(in, pieces, [](piece_cursor& c, size_t ini, size_t end) {
    for (size_t pos = ini; pos < end;) {
      const uint32_t cpt = c.cpt(pos);
      const codepoint_flags flags = c.flags(pos);

      if (cpt == '\'' && pos + 1 < end) {  // contractions, case-sensitive
        const uint32_t next = c.cpt(pos + 1);
        if (next == 's' || next == 't' || next == 'm' || next == 'd') {
          pos += c.add_token(pos + 2);
          continue;
        }
        if (pos + 2 < end) {
          const uint32_t next2 = c.cpt(pos + 2);
          if ((next == 'r' && next2 == 'e') || (next == 'v' && next2 == 'e') ||
              (next == 'l' && next2 == 'l')) {
            pos += c.add_token(pos + 3);
            continue;
          }
        }
      }

      codepoint_flags f2 = (cpt == ' ') ? c.flags(pos + 1) : flags;
      if (f2.is_letter()) {  // ' ?\p{L}+'
        pos += (cpt == ' ');
        while (f2.is_letter()) f2 = c.flags(++pos);
        c.add_token(pos);
        continue;
      }
      if (f2.is_number()) {  // ' ?\p{N}+'
        pos += (cpt == ' ');
        while (f2.is_number()) f2 = c.flags(++pos);
        c.add_token(pos);
        continue;
      }
      if (is_not_space_letter_number(f2)) {  // ' ?[^\s\p{L}\p{N}]+'
        pos += (cpt == ' ');
        while (is_not_space_letter_number(f2)) f2 = c.flags(++pos);
        c.add_token(pos);
        continue;
      }

      size_t n_ws = 0;
      while (c.flags(pos + n_ws).is_whitespace()) ++n_ws;
      if (n_ws > 1 && c.cpt(pos + n_ws) != out_of_range) {  // '\s+(?!\S)'
        pos += n_ws - 1;
        c.add_token(pos);
        continue;
      }
      if (n_ws > 0) {  // '\s+'
        pos += n_ws;
        c.add_token(pos);
        continue;
      }
      c.add_token(++pos);  // no match
    }
  });
}

// The Llama-3 regex family, one hand-written matcher as llama.cpp has one per member:
//   llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//           ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2:  the same with \p{N} (one digit per word);
//   qwen35: qwen2 with [\p{L}\p{M}]+ for letters and marks excluded from the punctuation class.
struct llama3_style {
  size_t max_digits;  // 3 or 1
  bool marks;         // combining marks count as letters
};

std::vector<size_t> split_llama3(const split_input& in, const std::vector<size_t>& pieces, llama3_style style) {
  auto wordlike = [&](codepoint_flags f) { return f.is_letter() || (style.marks && f.is_mark()); };
  auto other = [&](codepoint_flags f) {  // [^\s\p{L}(\p{M})\p{N}], false outside the piece
    return !(f.is_whitespace() || wordlike(f) || f.is_number()) && !f.empty();
  };
  return for_each_piece(in, pieces, [&](piece_cursor& c, size_t ini, size_t end) {
    for (size_t pos = ini; pos < end;) {
      const uint32_t cpt = c.cpt(pos);
      const codepoint_flags flags = c.flags(pos);

      if (cpt == '\'' && pos + 1 < end) {  // contractions, case-insensitive
        const uint32_t next = codepoint_to_lower(c.cpt(pos + 1));
        if (next == 's' || next == 't' || next == 'm' || next == 'd') {
          pos += c.add_token(pos + 2);
          continue;
        }
        if (pos + 2 < end) {
          const uint32_t next2 = codepoint_to_lower(c.cpt(pos + 2));
          if ((next == 'r' && next2 == 'e') || (next == 'v' && next2 == 'e') ||
              (next == 'l' && next2 == 'l')) {
            pos += c.add_token(pos + 3);
            continue;
          }
        }
      }

      if (!(cpt == '\r' || cpt == '\n' || flags.is_number())) {  // [^\r\n\p{L}\p{N}]?\p{L}+
        if (wordlike(flags) || wordlike(c.flags(pos + 1))) {
          ++pos;
          while (wordlike(c.flags(pos))) ++pos;
          c.add_token(pos);
          continue;
        }
      }

      if (flags.is_number()) {  // \p{N}{1,max_digits}
        size_t first = pos;
        while (c.flags(pos).is_number()) {
          if (++pos - first >= style.max_digits) {
            c.add_token(pos);
            first = pos;
          }
        }
        c.add_token(pos);
        continue;
      }

      // ' ?[^\s\p{L}\p{N}]+[\r\n]*'; like llama.cpp, the guard tests the current code point's
      // flags for emptiness and the loop tests the looked-ahead ones.
      codepoint_flags f2 = (cpt == ' ') ? c.flags(pos + 1) : flags;
      if (!(f2.is_whitespace() || wordlike(f2) || f2.is_number()) && !flags.empty()) {
        pos += (cpt == ' ');
        while (other(f2)) f2 = c.flags(++pos);
        uint32_t cpt2 = c.cpt(pos);
        while (cpt2 == '\r' || cpt2 == '\n') cpt2 = c.cpt(++pos);
        c.add_token(pos);
        continue;
      }

      size_t n_ws = 0;
      size_t last_end_r_or_n = 0;
      while (c.flags(pos + n_ws).is_whitespace()) {
        const uint32_t cpt2 = c.cpt(pos + n_ws);
        if (cpt2 == '\r' || cpt2 == '\n') last_end_r_or_n = pos + n_ws + 1;
        ++n_ws;
      }
      if (last_end_r_or_n > 0) {  // \s*[\r\n]+
        pos = last_end_r_or_n;
        c.add_token(pos);
        continue;
      }
      if (n_ws > 1 && c.cpt(pos + n_ws) != out_of_range) {  // \s+(?!\S)
        pos += n_ws - 1;
        c.add_token(pos);
        continue;
      }
      if (n_ws > 0) {  // \s+
        pos += n_ws;
        c.add_token(pos);
        continue;
      }
      c.add_token(++pos);
    }
  });
}

// A single-class regex ("[class]" or "[class]+") applied with llama.cpp's std::regex splitting:
// every match becomes a word and so does every stretch of text between matches.
template <class Pred>
std::vector<size_t> split_class(const split_input& in, const std::vector<size_t>& pieces,
                                bool runs, Pred pred) {
  return for_each_piece(in, pieces, [&](piece_cursor& c, size_t ini, size_t end) {
    for (size_t pos = ini; pos < end;) {
      if (!pred(pos)) {
        ++pos;
        continue;
      }
      c.add_token(pos);  // text before the match
      ++pos;
      if (runs) {
        while (pos < end && pred(pos)) ++pos;
      }
      c.add_token(pos);
    }
    c.add_token(end);
  });
}

// "[0-9][0-9][0-9]": non-overlapping triples of ASCII digits, leftmost first.
std::vector<size_t> split_digit_triples(const split_input& in, const std::vector<size_t>& pieces) {
  auto digit = [&](size_t i) { return in.cpts[i] >= '0' && in.cpts[i] <= '9'; };
  return for_each_piece(in, pieces, [&](piece_cursor& c, size_t ini, size_t end) {
    for (size_t pos = ini; pos < end;) {
      if (pos + 3 <= end && digit(pos) && digit(pos + 1) && digit(pos + 2)) {
        c.add_token(pos);
        pos += 3;
        c.add_token(pos);
      } else {
        ++pos;
      }
    }
    c.add_token(end);
  });
}

// \p{N} as llama.cpp's collapsed std::regex sees it: ASCII 0-9 or a non-ASCII number.
bool collapsed_number(const split_input& in, size_t i) {
  const uint32_t cpt = in.cpts[i];
  if (cpt < 128) return cpt >= '0' && cpt <= '9';
  return !in.flags[i].is_whitespace() && in.flags[i].is_number();
}

// [\p{P}\$\+<=>\^~\|] as llama.cpp's collapsed std::regex sees it: ASCII punctuation and
// symbols except '`', or a non-ASCII punctuation code point.
bool collapsed_punct(const split_input& in, size_t i) {
  const uint32_t cpt = in.cpts[i];
  if (cpt < 128) {
    return (cpt >= 0x21 && cpt <= 0x2F) || (cpt >= 0x3A && cpt <= 0x40) ||
           (cpt >= 0x5B && cpt <= 0x5F) || (cpt >= 0x7B && cpt <= 0x7E);
  }
  return !in.flags[i].is_whitespace() && in.flags[i].is_punctuation();
}

// The regex lists llama.cpp's llm_tokenizer_bpe runs with std::regex (no custom splitter exists
// for them), copied pattern for pattern from llama.cpp's src/llama-vocab.cpp. The "[\r\n]" entries
// hold real CR/LF characters there too.
const std::vector<regex_split>& regex_steps(pre_tokenizer_kind kind) {
  auto build = [](std::initializer_list<std::string_view> patterns) {
    std::vector<regex_split> steps;
    for (std::string_view p : patterns) {
      auto r = regex_split::compile(p);
      if (!r) std::abort();  // fixed patterns: a failure here is a build defect, caught by tests
      steps.push_back(std::move(*r));
    }
    return steps;
  };
  switch (kind) {
    case pre_tokenizer_kind::deepseek_llm: {
      static const std::vector<regex_split> steps = build({
          "[\r\n]",
          "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
          "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
          "\\s+$",
          "[一-龥ࠀ-一가-퟿]+",
          "\\p{N}+",
      });
      return steps;
    }
    case pre_tokenizer_kind::deepseek_coder: {
      static const std::vector<regex_split> steps = build({
          "[\r\n]",
          "\\s?\\p{L}+",
          "\\s?\\p{P}+",
          "[一-龥ࠀ-一가-퟿]+",
          "\\p{N}",
      });
      return steps;
    }
    case pre_tokenizer_kind::falcon: {  // the middle GPT-2 step is split_gpt2, as in llama.cpp
      static const std::vector<regex_split> steps = build({
          "[\\p{P}\\$\\+<=>\\^~\\|`]+",
          "[0-9][0-9][0-9]",
      });
      return steps;
    }
    default: {
      static const std::vector<regex_split> none;
      return none;
    }
  }
}

std::vector<size_t> run_regex(const split_input& in, const regex_split& step, const std::vector<size_t>& pieces) {
  return step.split(in.cpts, in.flags, pieces);
}

// tokenizer.ggml.pre values and what llama.cpp's vocab loader sets for them.
struct pre_entry {
  std::string_view name;
  pre_tokenizer_kind kind;
  bool ignore_merges;
  bool add_bos;
  bool clean_spaces;
};

using k = pre_tokenizer_kind;
constexpr pre_entry pre_entries[] = {
    {"default", k::default_bpe, false, false, true},
    {"gpt2", k::gpt2, false, false, true},
    {"gpt-2", k::gpt2, false, false, true},
    {"phi-2", k::gpt2, false, false, true},
    {"jina-es", k::gpt2, false, false, true},
    {"jina-de", k::gpt2, false, false, true},
    {"jina-v2-es", k::gpt2, false, false, true},
    {"jina-v2-de", k::gpt2, false, false, true},
    {"gigachat", k::gpt2, false, false, true},
    {"mpt", k::gpt2, false, false, true},
    {"olmo", k::gpt2, false, false, true},
    {"mellum", k::gpt2, false, false, true},
    {"exaone4", k::gpt2, false, false, true},
    {"a.x-4.0", k::gpt2, false, false, true},
    {"smollm", k::smollm, false, false, false},
    {"starcoder", k::smollm, false, false, true},
    {"refact", k::smollm, false, false, true},
    {"command-r", k::smollm, false, false, false},
    {"codeshell", k::smollm, false, false, true},
    {"exaone", k::smollm, false, false, true},
    {"minerva-7b", k::smollm, false, false, true},
    {"mellum2", k::smollm, false, false, true},
    {"llama3", k::llama3, true, true, true},
    {"llama-v3", k::llama3, true, true, true},
    {"llama-bpe", k::llama3, true, true, true},
    {"falcon3", k::llama3, true, true, true},
    {"falcon-h1", k::llama3, true, true, true},
    {"pixtral", k::llama3, true, true, true},
    {"midm-2.0", k::llama3, true, true, true},
    {"lfm2", k::llama3, true, true, true},
    {"jina-v5-nano", k::llama3, true, true, true},
    {"dbrx", k::llama3, false, false, true},
    {"smaug-bpe", k::llama3, false, false, true},
    {"qwen2", k::qwen2, false, false, false},
    {"deepseek-r1-qwen", k::qwen2, false, false, false},
    {"kormo", k::qwen2, false, false, false},
    {"f2llmv2", k::qwen2, false, false, false},
    {"hunyuan", k::qwen2, false, false, false},
    {"solar-open", k::qwen2, false, false, false},
    {"stablelm2", k::qwen2, false, false, true},
    {"megrez", k::qwen2, false, false, true},
    {"qwen35", k::qwen35, false, false, false},
    {"deepseek-llm", k::deepseek_llm, false, false, false},
    {"deepseek-coder", k::deepseek_coder, false, false, false},
    {"falcon", k::falcon, false, false, true},
};

}  // namespace

expected<pre_tokenizer> pre_tokenizer::from_name(std::string_view name) {
  const std::string_view key = name.empty() ? std::string_view("default") : name;
  for (const pre_entry& e : pre_entries) {
    if (e.name == key) {
      pre_tokenizer p(e.kind, e.ignore_merges, e.add_bos);
      p.clean_spaces_ = e.clean_spaces;
      p.name_ = std::string(key);
      (void)regex_steps(e.kind);  // compile the patterns now, not on the first request
      return p;
    }
  }
  return make_error(errc::unsupported,
                    "pre-tokenizer '" + std::string(name) +
                        "' is not supported (supported: default, gpt2, smollm, llama3, qwen2, qwen35, "
                        "deepseek-llm, deepseek-coder, falcon families)");
}

std::string_view pre_tokenizer::kind_name() const {
  switch (kind_) {
    case pre_tokenizer_kind::default_bpe: return "default";
    case pre_tokenizer_kind::gpt2: return "gpt2";
    case pre_tokenizer_kind::smollm: return "smollm";
    case pre_tokenizer_kind::llama3: return "llama3";
    case pre_tokenizer_kind::qwen2: return "qwen2";
    case pre_tokenizer_kind::qwen35: return "qwen35";
    case pre_tokenizer_kind::deepseek_llm: return "deepseek-llm";
    case pre_tokenizer_kind::deepseek_coder: return "deepseek-coder";
    case pre_tokenizer_kind::falcon: return "falcon";
  }
  return "?";
}

std::vector<size_t> pre_tokenizer::split(std::span<const uint32_t> cpts) const {
  if (cpts.empty()) return {};
  split_input in{cpts, {}};
  in.flags.reserve(cpts.size());
  for (uint32_t cpt : cpts) in.flags.push_back(codepoint_category(cpt));

  std::vector<size_t> pieces = {cpts.size()};
  switch (kind_) {
    case pre_tokenizer_kind::gpt2:
      return split_gpt2(in, pieces);
    case pre_tokenizer_kind::smollm:
      pieces = split_class(in, pieces, /*runs=*/false,
                           [&](size_t i) { return collapsed_number(in, i); });
      return split_gpt2(in, pieces);
    case pre_tokenizer_kind::llama3:
      return split_llama3(in, pieces, {3, false});
    case pre_tokenizer_kind::qwen2:
      return split_llama3(in, pieces, {1, false});
    case pre_tokenizer_kind::qwen35:
      return split_llama3(in, pieces, {1, true});
    case pre_tokenizer_kind::default_bpe:
      pieces = split_class(in, pieces, /*runs=*/true, [&](size_t i) { return collapsed_punct(in, i); });
      pieces = split_gpt2(in, pieces);
      pieces = split_class(in, pieces, /*runs=*/true,
                           [&](size_t i) { return collapsed_number(in, i); });
      return split_digit_triples(in, pieces);
    case pre_tokenizer_kind::falcon: {
      const auto& steps = regex_steps(kind_);
      pieces = run_regex(in, steps[0], pieces);
      pieces = split_gpt2(in, pieces);
      return run_regex(in, steps[1], pieces);
    }
    case pre_tokenizer_kind::deepseek_llm:
    case pre_tokenizer_kind::deepseek_coder:
      for (const regex_split& step : regex_steps(kind_)) pieces = run_regex(in, step, pieces);
      return pieces;
  }
  return pieces;
}

std::vector<std::string> pre_tokenizer::split_text(std::string_view text) const {
  const std::vector<uint32_t> cpts = utf8_to_codepoints(text);
  std::vector<std::string> words;
  size_t start = 0;
  for (size_t len : split(cpts)) {
    std::string w;
    for (size_t i = start; i < start + len; ++i) append_utf8(w, cpts[i]);
    words.push_back(std::move(w));
    start += len;
  }
  return words;
}

}  // namespace fw
