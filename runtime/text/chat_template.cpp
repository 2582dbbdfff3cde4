#include "runtime/text/chat_template.hpp"

#include "runtime/gguf/gguf_file.hpp"
#include "runtime/text/unicode_text.hpp"

namespace fw {
namespace {

constexpr std::string_view im_start = "<|im_start|>";
constexpr std::string_view im_end = "<|im_end|>";
constexpr std::string_view system_header = "<|im_start|>system\n";

// Reads the Jinja (Python-style) string literal whose opening quote is at `pos`; returns its
// value and sets `end` past the closing quote, or nullopt if it is not terminated.
std::optional<std::string> read_string_literal(std::string_view src, size_t pos, size_t& end) {
  const char quote = src[pos];
  std::string value;
  for (size_t i = pos + 1; i < src.size(); ++i) {
    const char c = src[i];
    if (c == quote) {
      end = i + 1;
      return value;
    }
    if (c == '\\' && i + 1 < src.size()) {
      const char e = src[++i];
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        default: value += '\\'; value += e; break;
      }
      continue;
    }
    value += c;
  }
  return std::nullopt;
}

struct default_system_info {
  std::string text;
  size_t position = 0;
};

// Is `lit` a fixed '<|im_start|>system\n...<|im_end|>\n' message? Returns its content.
std::optional<std::string> system_message_content(std::string_view v) {
  if (v.substr(0, system_header.size()) != system_header) return std::nullopt;
  v.remove_prefix(system_header.size());
  if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
  if (v.size() <= im_end.size() || v.substr(v.size() - im_end.size()) != im_end) return std::nullopt;
  v.remove_suffix(im_end.size());
  return std::string(v);
}

// Finds, inside the template's {{ }} / {% %} blocks, a string literal holding a complete system
// message with fixed content: the default system prompt.
std::optional<default_system_info> find_default_system(std::string_view src) {
  size_t pos = 0;
  while ((pos = src.find('{', pos)) != std::string_view::npos) {
    if (pos + 1 >= src.size() || (src[pos + 1] != '{' && src[pos + 1] != '%')) {
      ++pos;
      continue;
    }
    const char closer = src[pos + 1] == '{' ? '}' : '%';
    size_t i = pos + 2;
    for (; i < src.size(); ++i) {
      const char c = src[i];
      if (c == closer && i + 1 < src.size() && src[i + 1] == '}') break;
      if (c != '\'' && c != '"') continue;
      size_t end = 0;
      auto lit = read_string_literal(src, i, end);
      if (!lit) return std::nullopt;  // unterminated literal: give up rather than guess
      if (auto content = system_message_content(*lit)) return default_system_info{*content, i};
      i = end - 1;
    }
    pos = i + 2;
  }
  return std::nullopt;
}

// Python's str.lstrip()/rstrip(): White_Space plus the ASCII separators U+001C..U+001F.
std::string py_strip(std::string_view text, bool left, bool right) {
  const std::vector<uint32_t> cpts = utf8_to_codepoints(text);
  auto space = [](uint32_t c) { return (c >= 0x1C && c <= 0x1F) || codepoint_category(c).is_whitespace(); };
  size_t b = 0, e = cpts.size();
  while (left && b < e && space(cpts[b])) ++b;
  while (right && e > b && space(cpts[e - 1])) --e;
  // Re-slice the original bytes so invalid UTF-8 inside the text survives untouched.
  size_t off = 0, start = 0, end = text.size();
  for (size_t i = 0; i <= cpts.size(); ++i) {
    if (i == b) start = off;
    if (i == e) end = off;
    if (i < cpts.size()) utf8_decode_one(text, off);
  }
  return std::string(text.substr(start, end - start));
}

// Collects parts: control markers apart, adjacent plain text merged.
struct part_sink {
  std::vector<chat_part>& out;
  void control(std::string_view marker) { out.push_back({std::string(marker), true}); }
  void plain(std::string_view text) {
    if (text.empty()) return;
    if (!out.empty() && !out.back().control) out.back().text += text;
    else out.push_back({std::string(text), false});
  }
};

}  // namespace

expected<chat_template> chat_template::from_gguf(const gguf_file& file) {
  auto src = file.get_string("tokenizer.chat_template");
  if (!src) return make_error(errc::unsupported, "model has no tokenizer.chat_template");
  std::string bos = "<s>", eos = "</s>";
  if (const gguf_value* tokens = file.find("tokenizer.ggml.tokens")) {
    if (const auto* list = tokens->as_string_array()) {
      auto text_of = [&](const char* key, std::string& out) {
        if (auto id = file.get_uint(key); id && *id < list->size()) out = (*list)[*id];
      };
      text_of("tokenizer.ggml.bos_token_id", bos);
      text_of("tokenizer.ggml.eos_token_id", eos);
    }
  }
  return from_source(std::move(*src), std::move(bos), std::move(eos));
}

expected<chat_template> chat_template::from_source(std::string source, std::string bos_token,
                                                   std::string eos_token) {
  auto has = [&](std::string_view s) { return source.find(s) != std::string::npos; };
  chat_template t;
  if (has(im_start)) {
    t.family_ = chat_family::chatml;
    if (auto sys = find_default_system(source)) {
      t.default_system_ = std::move(sys->text);
      const size_t loop_first = source.find("loop.first");
      t.default_system_needs_messages_ = loop_first != std::string::npos && loop_first < sys->position;
    }
  } else if (has("<|user|>") && has("<|assistant|>") && has("<|end|>")) {
    t.family_ = chat_family::phi3;
    t.phi3_v35_ = has("<|system|>");
  } else if (has("[INST]") && has("<<SYS>>")) {
    t.family_ = chat_family::llama2;
  } else if (has("[INST]")) {
    t.family_ = chat_family::mistral;
  } else {
    std::string head = source.substr(0, 60);
    for (char& c : head) {
      if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    }
    return make_error(errc::unsupported,
                      "unsupported chat template (recognised: ChatML, Llama 2, Mistral, Phi-3): '" + head +
                          (source.size() > 60 ? "...'" : "'"));
  }
  t.source_ = std::move(source);
  t.bos_ = std::move(bos_token);
  t.eos_ = std::move(eos_token);
  return t;
}

chat_template chat_template::chatml(std::optional<std::string> default_system) {
  chat_template t;
  t.default_system_ = std::move(default_system);
  return t;
}

std::string_view chat_template::family() const {
  switch (family_) {
    case chat_family::chatml: return "chatml";
    case chat_family::llama2: return "llama2";
    case chat_family::mistral: return "mistral";
    case chat_family::phi3: return "phi3";
  }
  return "?";
}

void chat_template::render_chatml(const std::vector<chat_message>& messages, bool add_generation_prompt,
                                  std::vector<chat_part>& parts) const {
  part_sink out{parts};
  auto emit = [&](std::string_view role, std::string_view content) {
    out.control(im_start);
    out.plain(role);
    out.plain("\n");
    out.plain(content);
    out.control(im_end);
    out.plain("\n");
  };
  const bool starts_with_system = !messages.empty() && messages.front().role == "system";
  if (default_system_ && !starts_with_system && (!messages.empty() || !default_system_needs_messages_))
    emit("system", *default_system_);
  for (const chat_message& m : messages) emit(m.role, m.content);
  if (add_generation_prompt) {
    out.control(im_start);
    out.plain("assistant\n");
  }
}

void chat_template::render_llama2(const std::vector<chat_message>& messages, std::vector<chat_part>& parts) const {
  part_sink out{parts};
  size_t first = 0;
  const chat_message* system = nullptr;
  if (!messages.empty() && messages.front().role == "system") {
    system = &messages.front();
    first = 1;
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const chat_message& m = messages[i];
    std::vector<chat_part> content;  // the message, with the system block in front of the first
    part_sink c{content};
    if (i == first && system) {
      c.control("<<SYS>>");
      c.plain("\n" + system->content + "\n");
      c.control("<</SYS>>");
      c.plain("\n\n");
    }
    c.plain(m.content);
    // content.strip() strips the whole string, system block included: only its ends can change.
    if (!content.empty() && !content.front().control)
      content.front().text = py_strip(content.front().text, true, false);
    if (!content.empty() && !content.back().control)
      content.back().text = py_strip(content.back().text, false, true);
    std::erase_if(content, [](const chat_part& p) { return p.text.empty(); });
    if (m.role == "user") {
      out.control(bos_);
      out.control("[INST]");
      out.plain(" ");
      for (const chat_part& p : content) p.control ? out.control(p.text) : out.plain(p.text);
      out.plain(" ");
      out.control("[/INST]");
    } else if (m.role == "assistant") {
      out.plain(" ");
      for (const chat_part& p : content) p.control ? out.control(p.text) : out.plain(p.text);
      out.plain(" ");
      out.control(eos_);
    }
  }
}

void chat_template::render_mistral(const std::vector<chat_message>& messages, std::vector<chat_part>& parts) const {
  part_sink out{parts};
  out.control(bos_);
  std::string pending_system;
  for (const chat_message& m : messages) {
    if (m.role == "system") {
      pending_system += (pending_system.empty() ? "" : "\n\n") + m.content;
    } else if (m.role == "user") {
      out.control("[INST]");
      out.plain(" ");
      if (!pending_system.empty()) out.plain(pending_system + "\n\n");
      pending_system.clear();
      out.plain(m.content);
      out.plain(" ");
      out.control("[/INST]");
    } else if (m.role == "assistant") {
      out.plain(m.content);
      out.control(eos_);
    }
  }
}

void chat_template::render_phi3(const std::vector<chat_message>& messages, bool add_generation_prompt,
                                std::vector<chat_part>& parts) const {
  part_sink out{parts};
  auto turn = [&](std::string_view marker, std::string_view content) {
    out.control(marker);
    out.plain("\n");
    out.plain(content);
    out.control("<|end|>");
    out.plain("\n");
  };
  if (!phi3_v35_) {  // Phi-3-mini: assistant header after every user turn, no system messages
    out.control(bos_);
    for (const chat_message& m : messages) {
      if (m.role == "user") {
        turn("<|user|>", m.content);
        out.control("<|assistant|>");
        out.plain("\n");
      } else if (m.role == "assistant") {
        out.plain(m.content);
        out.control("<|end|>");
        out.plain("\n");
      }
    }
    return;
  }
  for (const chat_message& m : messages) {
    if (m.role == "system" && !m.content.empty()) turn("<|system|>", m.content);
    else if (m.role == "user") turn("<|user|>", m.content);
    else if (m.role == "assistant") turn("<|assistant|>", m.content);
  }
  if (add_generation_prompt) {
    out.control("<|assistant|>");
    out.plain("\n");
  } else {
    out.control(eos_);
  }
}

std::vector<chat_part> chat_template::render(const std::vector<chat_message>& messages,
                                            bool add_generation_prompt) const {
  std::vector<chat_part> out;
  switch (family_) {
    case chat_family::chatml: render_chatml(messages, add_generation_prompt, out); break;
    case chat_family::llama2: render_llama2(messages, out); break;
    case chat_family::mistral: render_mistral(messages, out); break;
    case chat_family::phi3: render_phi3(messages, add_generation_prompt, out); break;
  }
  return out;
}

std::string chat_template::apply(const std::vector<chat_message>& messages,
                                 bool add_generation_prompt) const {
  std::string out;
  for (const chat_part& p : render(messages, add_generation_prompt)) out += p.text;
  return out;
}

}  // namespace fw
