// tokenizer, building half: reading tokenizer.ggml.* from a GGUF (from_gguf), validating plain
// vectors (from_vocab) and the attributes llama.cpp derives after loading (end-of-generation and
// FIM tokens by text, strip rules by model name). Encoding and decoding are in tokenizer.cpp.
#include "runtime/text/tokenizer.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "runtime/gguf/gguf_file.hpp"
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
    // The first token of each kind ends generation and becomes a control token.
    auto first_of = [&](bool& have, const auto& texts) {
      if (have || !contains(texts, text)) return;
      have = true;
      t.eog_.insert(id);
      mark_control(id);
    };
    first_of(have_eot, eot_texts);
    first_of(have_pad, fim_pad_texts);
    first_of(have_rep, fim_rep_texts);
    first_of(have_sep, fim_sep_texts);
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

}  // namespace fw
