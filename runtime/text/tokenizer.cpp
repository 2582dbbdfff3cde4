#include "runtime/text/tokenizer.hpp"

#include <algorithm>
#include <cctype>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <queue>

#include "runtime/gguf/gguf_file.hpp"
#include "runtime/text/spm_encoder.hpp"
#include "runtime/text/unicode_text.hpp"

namespace fw {
namespace {

// One BPE symbol: a byte range of the encoded word, linked to its live neighbours.
struct bpe_symbol {
  uint32_t start;
  uint32_t len;
  int32_t prev;
  int32_t next;
};

struct bpe_bigram {
  int32_t rank;
  int32_t left;
  int32_t right;
  uint32_t left_len;
  uint32_t right_len;
};

// Lowest rank first, then leftmost (llama.cpp's llm_bigram_bpe::comparator).
struct bigram_order {
  bool operator()(const bpe_bigram& a, const bpe_bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

std::string tokenizer::render_piece(int32_t id) const {
  const std::string& text = tokens_[id];
  const uint32_t a = attrs_[id];
  if (a & (attr_unknown | attr_control | attr_user_defined)) return text;
  if ((a & attr_normal) && kind_ == tokenizer_kind::spm) {
    std::string out;  // llama_unescape_whitespace: every "▁" is a space
    for (size_t i = 0; i < text.size();) {
      if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
        out.push_back(' ');
        i += 3;
      } else {
        out.push_back(text[i++]);
      }
    }
    return out;
  }
  if (a & attr_normal) {
    // llama.cpp's llama_decode_text: every character must stand for a byte.
    std::string out;
    for (uint32_t cpt : utf8_to_codepoints(text)) {
      if (auto b = unicode_to_byte(cpt)) {
        out.push_back(static_cast<char>(*b));
      } else {
        out += "[UNK_BYTE_0x";
        for (unsigned char c : codepoint_to_utf8(cpt)) {
          char hex[3];
          std::snprintf(hex, sizeof hex, "%02x", c);
          out += hex;
        }
        out += text + "]";
      }
    }
    return out;
  }
  if (a & attr_byte) {
    if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>')
      return std::string(1, static_cast<char>(std::strtol(text.substr(3, 2).c_str(), nullptr, 16)));
    return {};
  }
  return {};  // unused / undefined tokens render as nothing
}

namespace {
// llama.cpp strips with C isspace on raw bytes: ASCII whitespace only.
bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
}  // namespace

void tokenizer::partition(std::string_view text, bool parse_special, std::vector<fragment>& out) const {
  std::vector<fragment> frags;
  if (!text.empty()) frags.push_back({-1, text});
  std::vector<fragment> next;
  for (int32_t special : special_by_length_) {
    const uint32_t a = attrs_[special];
    if (!parse_special && (a & (attr_control | attr_unknown))) continue;
    const std::string& st = tokens_[special];
    if (text.find(st) == std::string_view::npos) continue;  // fast path: absent everywhere
    next.clear();
    for (const fragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      while (!rest.empty()) {
        const size_t match = rest.find(st);
        if (match == std::string_view::npos) break;
        std::string_view left = rest.substr(0, match);
        if (a & attr_lstrip) {
          while (!left.empty() && is_ascii_space(left.back())) left.remove_suffix(1);
        }
        if (!left.empty()) next.push_back({-1, left});
        next.push_back({special, rest.substr(match, st.size())});
        rest.remove_prefix(match + st.size());
        if (a & attr_rstrip) {
          while (!rest.empty() && is_ascii_space(rest.front())) rest.remove_prefix(1);
        }
      }
      if (!rest.empty()) next.push_back({-1, rest});
    }
    frags.swap(next);
  }
  out.insert(out.end(), frags.begin(), frags.end());
}

std::vector<int32_t> tokenizer::encode_fragments(const std::vector<fragment>& frags, bool add_special) const {
  std::vector<int32_t> out;
  if (add_special && add_bos_ && bos_ >= 0) out.push_back(bos_);
  // spm: a text fragment at the start or right after a special token gets a space prefix.
  bool after_special = true;
  for (const fragment& f : frags) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    if (kind_ == tokenizer_kind::spm) encode_spm_fragment(f.text, add_space_prefix_ && after_special, out);
    else encode_fragment(f.text, out);
    after_special = false;
  }
  if (add_special && add_eos_ && eos_ >= 0) out.push_back(eos_);
  return out;
}

std::vector<int32_t> tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<fragment> frags;
  partition(text, parse_special, frags);
  return encode_fragments(frags, add_special);
}

std::vector<int32_t> tokenizer::encode_pieces(std::span<const prompt_piece> pieces, bool add_special) const {
  std::vector<fragment> frags;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const prompt_piece& p = pieces[i];
    if (p.token >= 0) {
      if (p.token < n_vocab()) frags.push_back({p.token, {}});
      continue;
    }
    // The neighbouring tokens' strip rules apply as if the whole prompt were partitioned.
    std::string_view text = p.text;
    auto token_attr = [&](size_t j) { return pieces[j].token >= 0 && pieces[j].token < n_vocab() ? attrs_[pieces[j].token] : 0u; };
    if (i > 0 && (token_attr(i - 1) & attr_rstrip)) {
      while (!text.empty() && is_ascii_space(text.front())) text.remove_prefix(1);
    }
    if (i + 1 < pieces.size() && (token_attr(i + 1) & attr_lstrip)) {
      while (!text.empty() && is_ascii_space(text.back())) text.remove_suffix(1);
    }
    partition(text, false, frags);
  }
  return encode_fragments(frags, add_special);
}

void tokenizer::encode_spm_fragment(std::string_view text, bool space_prefix, std::vector<int32_t>& out) const {
  std::string escaped;  // llama_escape_whitespace: every space becomes "▁"
  escaped.reserve(text.size() + 3);
  if (space_prefix) escaped += "\xE2\x96\x81";
  for (char c : text) {
    if (c == ' ') escaped += "\xE2\x96\x81";
    else escaped.push_back(c);
  }
  spm_encode(escaped, spm_vocab_view{token_to_id_, scores_, byte_tokens_, unk_}, out);
}

void tokenizer::encode_fragment(std::string_view text, std::vector<int32_t>& out) const {
  const std::vector<uint32_t> cpts = utf8_to_codepoints(text);
  const std::vector<size_t> words = pre_.split(cpts);
  std::string utf8;
  std::string word;
  size_t start = 0;
  for (size_t len : words) {
    utf8.clear();
    for (size_t i = start; i < start + len; ++i) append_utf8(utf8, cpts[i]);
    start += len;
    word.clear();
    for (unsigned char b : utf8) word += byte_to_unicode_text(b);
    encode_word(word, out);
  }
}

int32_t tokenizer::merge_rank(std::string_view left, std::string_view right, std::string& key) const {
  key.assign(left);
  key.push_back(' ');
  key.append(right);
  auto it = merge_ranks_.find(key);
  return it == merge_ranks_.end() ? -1 : it->second;
}

void tokenizer::encode_word(const std::string& word, std::vector<int32_t>& out) const {
  if (pre_.ignore_merges()) {
    if (auto it = token_to_id_.find(word); it != token_to_id_.end()) {
      out.push_back(it->second);
      return;
    }
  }

  // One symbol per encoded character (each stands for one byte of the original text).
  std::vector<bpe_symbol> syms;
  syms.reserve(word.size());
  for (size_t off = 0; off < word.size();) {
    const size_t len = std::min(word.size() - off, utf8_sequence_length(static_cast<uint8_t>(word[off])));
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({static_cast<uint32_t>(off), static_cast<uint32_t>(len), idx - 1,
                    off + len == word.size() ? -1 : idx + 1});
    off += len;
  }

  const std::string_view w(word);
  std::string key;
  std::priority_queue<bpe_bigram, std::vector<bpe_bigram>, bigram_order> queue;
  auto add_bigram = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const bpe_symbol& l = syms[left];
    const bpe_symbol& r = syms[right];
    const int32_t rank = merge_rank(w.substr(l.start, l.len), w.substr(r.start, r.len), key);
    if (rank < 0) return;
    queue.push({rank, left, right, l.len, r.len});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) add_bigram(i - 1, i);

  while (!queue.empty()) {
    const bpe_bigram bg = queue.top();
    queue.pop();
    bpe_symbol& l = syms[bg.left];
    bpe_symbol& r = syms[bg.right];
    // Symbols only grow, so unchanged lengths mean the pair is still current.
    if (l.len == 0 || r.len == 0 || l.len != bg.left_len || r.len != bg.right_len) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = bg.left;
    add_bigram(l.prev, bg.left);
    add_bigram(bg.left, l.next);
  }

  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    const bpe_symbol& s = syms[i];
    const std::string_view text = w.substr(s.start, s.len);
    if (auto it = token_to_id_.find(text); it != token_to_id_.end()) {
      out.push_back(it->second);
      continue;
    }
    // Not in the vocabulary (an inconsistent merge list): fall back to one token per byte.
    for (size_t off = 0; off < text.size();) {
      const size_t len = std::min(text.size() - off, utf8_sequence_length(static_cast<uint8_t>(text[off])));
      if (auto it = token_to_id_.find(text.substr(off, len)); it != token_to_id_.end())
        out.push_back(it->second);
      off += len;
    }
  }
}

std::string tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= n_vocab()) continue;
    if (!render_special && (attrs_[id] & (attr_control | attr_unknown))) continue;
    out += pieces_[id];
  }
  return out;
}

std::string tokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (id < 0 || id >= n_vocab()) return {};
  if (!render_special && (attrs_[id] & (attr_control | attr_unknown))) return {};
  return pieces_[id];
}

std::vector<int32_t> tokenizer::eog_ids() const {
  std::vector<int32_t> ids(eog_.begin(), eog_.end());
  std::sort(ids.begin(), ids.end());
  return ids;
}

bool tokenizer::is_control(int32_t id) const {
  return id >= 0 && id < n_vocab() && (attrs_[id] & attr_control) != 0;
}

token_type tokenizer::type(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return token_type::undefined;
  const uint32_t a = attrs_[id];
  if (a & attr_control) return token_type::control;
  if (a & attr_user_defined) return token_type::user_defined;
  if (a & attr_unknown) return token_type::unknown;
  if (a & attr_byte) return token_type::byte;
  if (a & attr_unused) return token_type::unused;
  if (a & attr_normal) return token_type::normal;
  return token_type::undefined;
}

const std::string& tokenizer::token_text(int32_t id) const {
  static const std::string empty;
  if (id < 0 || id >= n_vocab()) return empty;
  return tokens_[id];
}

std::optional<int32_t> tokenizer::find_token(std::string_view text) const {
  if (auto it = token_to_id_.find(text); it != token_to_id_.end()) return it->second;
  return std::nullopt;
}

std::string tokenizer::detokenize(std::span<const int32_t> ids, bool remove_special, bool unparse_special) const {
  bool remove_space = add_space_prefix_;
  if (remove_special && add_bos_ && !ids.empty() && ids.front() == bos_) {
    remove_space = false;
    ids = ids.subspan(1);
  }
  if (remove_special && add_eos_ && !ids.empty() && ids.back() == eos_) ids = ids.first(ids.size() - 1);

  std::string text;
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, unparse_special);
    // llama.cpp passes lstrip = 1 for the first token only, whatever its piece is.
    if (remove_space && !piece.empty() && piece.front() == ' ') piece.erase(0, 1);
    remove_space = false;
    text += piece;
  }
  if (!clean_spaces_ || text.empty()) return text;

  // llama_detokenize's clean_up_tokenization_spaces, three passes as llama.cpp runs them.
  std::string a(1, text[0]);
  for (size_t i = 1; i < text.size(); ++i) {  // " ?", " !", " .", " ,"
    const char x = text[i];
    if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
    a.push_back(x);
  }
  std::string b(1, a[0]);
  for (size_t i = 1; i < a.size(); ++i) {  // " ' " -> "'"
    const char x = a[i];
    if (x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
      b.pop_back();
      a[++i] = '\0';  // as llama.cpp: the next space is overwritten, then skipped
    }
    b.push_back(x);
  }
  std::string c(1, b[0]);
  for (size_t i = 1; i < b.size(); ++i) {  // " 's", " 'm", " 're", " 've" lose the space
    const char x = b[i];
    if (b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      const char x1 = b[i + 1];
      if (x1 == 's' || x1 == 'm') c.pop_back();
      else if (i + 2 < b.size() && ((x1 == 'r' && b[i + 2] == 'e') || (x1 == 'v' && b[i + 2] == 'e'))) c.pop_back();
    }
    c.push_back(x);
  }
  return c;
}

std::string_view tokenizer::kind_name() const {
  return kind_ == tokenizer_kind::spm ? "spm (sentencepiece)" : "bpe (gpt2 byte-level)";
}

std::string_view tokenizer::pre_name() const {
  return kind_ == tokenizer_kind::spm ? std::string_view() : std::string_view(pre_.name());
}

std::string token_text_stream::push(int32_t id) {
  pending_ += tok_->token_to_piece(id, render_special_);
  const size_t hold = utf8_incomplete_tail(pending_);
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string token_text_stream::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace fw
