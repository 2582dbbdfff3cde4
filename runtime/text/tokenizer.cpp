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

// Token texts llama.cpp treats as end-of-generation (and forces to control type).
constexpr std::array<std::string_view, 22> eog_texts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<｜end▁of▁sentence｜>", "[e~["};
// Texts llama.cpp recognises as the EOT token / FIM pad, repo and file-separator tokens.
constexpr std::array<std::string_view, 12> eot_texts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>", "<|eom_id|>"};
constexpr std::array<std::string_view, 5> fim_pad_texts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>",
                                                           "<PAD>", "[PAD]"};
constexpr std::array<std::string_view, 5> fim_rep_texts = {"<|fim_repo|>", "<|repo_name|>",
                                                           "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::array<std::string_view, 1> fim_sep_texts = {"<|file_sep|>"};
// Other texts llama.cpp's FIM detection forces to control type.
constexpr std::array<std::string_view, 24> fim_other_texts = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>",
    "<|code_prefix|>", "<|prefix|>", "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
    "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>", "<|fim_middle|>",
    "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>",
    "<|middle|>"};

template <size_t N>
bool contains(const std::array<std::string_view, N>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

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

expected<tokenizer> tokenizer::from_gguf(const gguf_file& file) {
  const auto model = file.get_string("tokenizer.ggml.model");
  if (!model) return make_error(errc::malformed_file, "missing tokenizer.ggml.model");
  if (*model != "gpt2" && *model != "llama") {
    return make_error(errc::unsupported, "tokenizer model '" + *model +
                                             "' is not supported; only byte-level BPE ('gpt2') and "
                                             "SentencePiece ('llama')");
  }

  tokenizer_vocab v;
  v.kind = *model == "llama" ? tokenizer_kind::spm : tokenizer_kind::bpe;
  v.name = file.get_string("general.name").value_or("");
  const gguf_value* tokens = file.find("tokenizer.ggml.tokens");
  if (!tokens || !tokens->as_string_array())
    return make_error(errc::malformed_file, "missing or non-string tokenizer.ggml.tokens");
  v.tokens = *tokens->as_string_array();
  const size_t n = v.tokens.size();

  if (const gguf_value* types = file.find("tokenizer.ggml.token_type")) {
    const auto* ints = types->as_int_array();
    if (!ints) return make_error(errc::malformed_file, "tokenizer.ggml.token_type is not an integer array");
    if (ints->size() < n) {
      return make_error(errc::malformed_file, "tokenizer.ggml.token_type has " +
                                                  std::to_string(ints->size()) + " entries for " +
                                                  std::to_string(n) + " tokens");
    }
    v.types.reserve(n);
    for (size_t i = 0; i < n; ++i) v.types.push_back(static_cast<int32_t>((*ints)[i]));
  }

  if (v.kind == tokenizer_kind::bpe) {
    const gguf_value* merges = file.find("tokenizer.ggml.merges");
    if (!merges || !merges->as_string_array())
      return make_error(errc::malformed_file, "missing or non-string tokenizer.ggml.merges");
    v.merges = *merges->as_string_array();
    v.pre = file.get_string("tokenizer.ggml.pre").value_or("");
  } else if (const gguf_value* scores = file.find("tokenizer.ggml.scores")) {
    const auto* floats = scores->as_float_array();
    const auto* ints = scores->as_int_array();
    const size_t count = floats ? floats->size() : ints ? ints->size() : 0;
    if (!floats && !ints) return make_error(errc::malformed_file, "tokenizer.ggml.scores is not a number array");
    if (count < n) {
      return make_error(errc::malformed_file, "tokenizer.ggml.scores has " + std::to_string(count) +
                                                  " entries for " + std::to_string(n) + " tokens");
    }
    v.scores.reserve(n);
    for (size_t i = 0; i < n; ++i)
      v.scores.push_back(floats ? static_cast<float>((*floats)[i]) : static_cast<float>((*ints)[i]));
  }

  // llama.cpp's defaults (bpe: bos = eos = 11; spm: bos 1, eos 2, unk 0) when in range, then the
  // file's ids when valid.
  const bool spm = v.kind == tokenizer_kind::spm;
  auto id_key = [&](const char* key, int32_t fallback) -> int32_t {
    int32_t id = (fallback >= 0 && static_cast<size_t>(fallback) < n) ? fallback : -1;
    if (auto u = file.get_uint(key); u && *u < n) id = static_cast<int32_t>(*u);
    return id;
  };
  v.bos = id_key("tokenizer.ggml.bos_token_id", spm ? 1 : 11);
  v.eos = id_key("tokenizer.ggml.eos_token_id", spm ? 2 : 11);
  v.unk = id_key("tokenizer.ggml.unknown_token_id", spm ? 0 : -1);
  v.pad = id_key("tokenizer.ggml.padding_token_id", -1);
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
                          "tokenizer.ggml.fim_pad_token_id", "tokenizer.ggml.fim_rep_token_id",
                          "tokenizer.ggml.fim_sep_token_id"}) {
    if (int32_t id = id_key(key, -1); id >= 0) v.extra_eog.push_back(id);
  }
  if (auto b = file.get_bool("tokenizer.ggml.add_bos_token")) v.add_bos = *b;
  if (auto b = file.get_bool("tokenizer.ggml.add_eos_token")) v.add_eos = *b;
  if (auto b = file.get_bool("tokenizer.ggml.add_space_prefix")) v.add_space_prefix = *b;
  return from_vocab(std::move(v));
}

expected<tokenizer> tokenizer::from_vocab(tokenizer_vocab v) {
  const bool spm = v.kind == tokenizer_kind::spm;
  auto pre = pre_tokenizer::from_name(spm ? "default" : v.pre);  // spm has no pre-tokenizer
  if (!pre) return pre.err();
  const size_t n = v.tokens.size();
  if (n == 0) return make_error(errc::invalid_argument, "tokenizer vocabulary is empty");
  if (!v.types.empty() && v.types.size() != n) {
    return make_error(errc::invalid_argument, "token types (" + std::to_string(v.types.size()) +
                                                  ") and tokens (" + std::to_string(n) + ") differ in length");
  }
  if (!v.scores.empty() && v.scores.size() != n) {
    return make_error(errc::invalid_argument, "token scores (" + std::to_string(v.scores.size()) +
                                                  ") and tokens (" + std::to_string(n) + ") differ in length");
  }
  for (int32_t id : {v.bos, v.eos, v.unk, v.pad}) {
    if (id < -1 || id >= static_cast<int32_t>(n))
      return make_error(errc::invalid_argument, "special token id " + std::to_string(id) + " out of range");
  }

  tokenizer t;
  t.pre_ = *pre;
  t.bos_ = v.bos;
  t.eos_ = v.eos;
  t.unk_ = v.unk;
  t.pad_ = v.pad;
  t.kind_ = v.kind;
  t.add_bos_ = v.add_bos.value_or(spm || t.pre_.default_add_bos());
  t.add_eos_ = v.add_eos.value_or(false);
  t.add_space_prefix_ = v.add_space_prefix.value_or(spm);
  t.clean_spaces_ = !spm && t.pre_.clean_spaces();
  t.scores_ = std::move(v.scores);
  if (t.scores_.empty()) t.scores_.assign(n, 0.0f);

  t.tokens_ = std::move(v.tokens);
  t.attrs_.resize(n, attr_normal);
  t.token_to_id_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (t.tokens_[i].empty()) t.tokens_[i] = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp
    t.token_to_id_[t.tokens_[i]] = static_cast<int32_t>(i);  // a later duplicate wins
    if (!v.types.empty()) {
      switch (static_cast<token_type>(v.types[i])) {
        case token_type::normal: t.attrs_[i] = attr_normal; break;
        case token_type::unknown: t.attrs_[i] = attr_unknown; break;
        case token_type::control: t.attrs_[i] = attr_control; break;
        case token_type::user_defined: t.attrs_[i] = attr_user_defined; break;
        case token_type::unused: t.attrs_[i] = attr_unused; break;
        case token_type::byte: t.attrs_[i] = attr_byte; break;
        default: t.attrs_[i] = attr_undefined; break;
      }
    }
  }

  t.merge_ranks_.reserve(v.merges.size());
  for (size_t i = 0; i < v.merges.size(); ++i) {
    const std::string& m = v.merges[i];
    const size_t space = m.find(' ', 1);
    std::string key = (space == std::string::npos) ? std::string(" ") : m;  // llama.cpp: ("", "")
    t.merge_ranks_.emplace(std::move(key), static_cast<int32_t>(i));        // first rank wins
  }

  // End-of-generation ids and control-type fixes, following llama.cpp's vocab loader.
  auto mark_control = [&](int32_t id) { t.attrs_[id] |= attr_control; };
  bool have_eot = false, have_pad = false, have_rep = false, have_sep = false;
  for (int32_t id : v.extra_eog) {
    if (id >= 0 && id < static_cast<int32_t>(n)) t.eog_.insert(id);
  }
  for (int32_t id = 0; id < static_cast<int32_t>(n); ++id) {
    const std::string& text = t.tokens_[id];
    if (!have_eot && contains(eot_texts, text)) {
      have_eot = true;
      t.eog_.insert(id);
      mark_control(id);
    }
    if (!have_pad && contains(fim_pad_texts, text)) {
      have_pad = true;
      t.eog_.insert(id);
      mark_control(id);
    }
    if (!have_rep && contains(fim_rep_texts, text)) {
      have_rep = true;
      t.eog_.insert(id);
      mark_control(id);
    }
    if (!have_sep && contains(fim_sep_texts, text)) {
      have_sep = true;
      t.eog_.insert(id);
      mark_control(id);
    }
    if (contains(fim_other_texts, text)) mark_control(id);
    if (contains(eog_texts, text)) {
      t.eog_.insert(id);
      mark_control(id);
    }
    if (text == "<|channel|>" || text == "<|message|>" || text == "<|start|>" || text == "<|constrain|>")
      t.attrs_[id] = attr_user_defined;  // llama.cpp always renders these (gpt-oss)
  }
  if (t.eos_ >= 0) t.eog_.insert(t.eos_);
  {
    // llama.cpp workarounds: "<|end|>" is not EOG next to "<|return|>"/"<|call|>" (or
    // "<|calls|>"/"<|flush|>"); "</s>" is a normal token next to "<|tool_response>"/"<|plamo:eos|>".
    bool has_return = false, has_call = false, has_flush = false, has_normal_s_marker = false;
    int32_t end_id = -1, s_id = -1;
    for (int32_t id : t.eog_) {
      const std::string& text = t.tokens_[id];
      if (text == "<|return|>") has_return = true;
      else if (text == "<|call|>" || text == "<|calls|>") has_call = true;
      else if (text == "<|flush|>") has_flush = true;
      else if (text == "<|end|>") end_id = id;
      else if (text == "<|tool_response>" || text == "<|plamo:eos|>") has_normal_s_marker = true;
      else if (text == "</s>") s_id = id;
    }
    if (end_id >= 0 && has_call && (has_return || has_flush)) {
      t.eog_.erase(end_id);
      t.attrs_[end_id] = attr_user_defined;
    }
    if (s_id >= 0 && has_normal_s_marker) {
      t.eog_.erase(s_id);
      t.attrs_[s_id] = attr_normal;
    }
  }

  for (int32_t id = 0; id < static_cast<int32_t>(n); ++id) {
    if (t.attrs_[id] & (attr_control | attr_user_defined | attr_unknown)) t.special_by_length_.push_back(id);
  }
  std::stable_sort(t.special_by_length_.begin(), t.special_by_length_.end(), [&](int32_t a, int32_t b) {
    return t.tokens_[a].size() > t.tokens_[b].size();
  });
  t.set_strip_attributes(v.name, v.pre);

  t.byte_tokens_.fill(-1);
  if (spm) {
    // llama.cpp's byte_to_token: "<0xXX>" (upper-case hex), else the one-byte token itself.
    for (int b = 0; b < 256; ++b) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "<0x%02X>", b);
      if (auto id = t.find_token(hex)) t.byte_tokens_[b] = *id;
      else if (auto one = t.find_token(std::string(1, static_cast<char>(b)))) t.byte_tokens_[b] = *one;
    }
  }

  t.pieces_.resize(n);
  for (int32_t id = 0; id < static_cast<int32_t>(n); ++id) t.pieces_[id] = t.render_piece(id);
  return t;
}

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

void tokenizer::set_strip_attributes(const std::string& model_name, const std::string& pre) {
  // llama.cpp sets these by name after loading (they are not in the GGUF).
  std::string lower = model_name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto set = [&](std::string_view text, uint32_t bit, bool on) {
    if (auto id = find_token(text)) attrs_[*id] = on ? (attrs_[*id] | bit) : (attrs_[*id] & ~bit);
  };
  if (pre.find("jina-v2-de") != std::string::npos || pre.find("jina-v2-es") != std::string::npos) {
    set("<mask>", attr_lstrip, true);
  } else if (lower.find("phi-3") != std::string::npos || lower.find("phi3") != std::string::npos) {
    for (int32_t id : special_by_length_) attrs_[id] |= attr_rstrip;
    set("</s>", attr_rstrip, true);
    for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) set(t, attr_rstrip, false);
  }
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
