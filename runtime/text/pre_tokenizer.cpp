#include "runtime/text/pre_tokenizer.hpp"

#include <array>

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

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+
std::vector<size_t> split_llama3(const split_input& in, const std::vector<size_t>& pieces) {
  return for_each_piece(in, pieces, [](piece_cursor& c, size_t ini, size_t end) {
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
        if (flags.is_letter() || c.flags(pos + 1).is_letter()) {
          ++pos;
          while (c.flags(pos).is_letter()) ++pos;
          c.add_token(pos);
          continue;
        }
      }

      if (flags.is_number()) {  // \p{N}{1,3}
        size_t first = pos;
        while (c.flags(pos).is_number()) {
          if (++pos - first >= 3) {
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
      if (!(f2.is_whitespace() || f2.is_letter() || f2.is_number()) && !flags.empty()) {
        pos += (cpt == ' ');
        while (is_not_space_letter_number(f2)) f2 = c.flags(++pos);
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

}  // namespace

expected<pre_tokenizer> pre_tokenizer::from_name(std::string_view name) {
  static constexpr std::array<std::string_view, 13> gpt2_names = {
      "gpt2", "gpt-2", "phi-2", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de", "gigachat",
      "mpt", "olmo", "mellum", "exaone4", "a.x-4.0"};
  static constexpr std::array<std::string_view, 8> smollm_names = {
      "smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b", "mellum2"};
  static constexpr std::array<std::string_view, 9> llama3_names = {
      "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
      "jina-v5-nano"};
  auto in = [&](const auto& list) {
    for (auto n : list) {
      if (n == name) return true;
    }
    return false;
  };
  if (name.empty() || name == "default") return pre_tokenizer(pre_tokenizer_kind::default_bpe);
  if (in(gpt2_names)) return pre_tokenizer(pre_tokenizer_kind::gpt2);
  if (in(smollm_names)) return pre_tokenizer(pre_tokenizer_kind::smollm);
  if (in(llama3_names)) return pre_tokenizer(pre_tokenizer_kind::llama3, true, true);
  if (name == "dbrx" || name == "smaug-bpe") return pre_tokenizer(pre_tokenizer_kind::llama3);
  return make_error(errc::unsupported,
                    "pre-tokenizer '" + std::string(name) +
                        "' is not supported (supported: default, gpt2, smollm, llama3 families)");
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
      return split_llama3(in, pieces);
    case pre_tokenizer_kind::default_bpe:
      pieces = split_class(in, pieces, /*runs=*/true, [&](size_t i) { return collapsed_punct(in, i); });
      pieces = split_gpt2(in, pieces);
      pieces = split_class(in, pieces, /*runs=*/true,
                           [&](size_t i) { return collapsed_number(in, i); });
      return split_digit_triples(in, pieces);
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
