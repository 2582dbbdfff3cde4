#include "runtime/text/chat_template.hpp"

#include "runtime/gguf/gguf_file.hpp"

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

}  // namespace

expected<chat_template> chat_template::from_gguf(const gguf_file& file) {
  auto src = file.get_string("tokenizer.chat_template");
  if (!src) return make_error(errc::unsupported, "model has no tokenizer.chat_template");
  return from_source(std::move(*src));
}

expected<chat_template> chat_template::from_source(std::string source) {
  if (source.find(im_start) == std::string::npos) {
    std::string head = source.substr(0, 60);
    for (char& c : head) {
      if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    }
    return make_error(errc::unsupported, "unsupported chat template (only ChatML is implemented): '" +
                                             head + (source.size() > 60 ? "...'" : "'"));
  }
  chat_template t;
  if (auto sys = find_default_system(source)) {
    t.default_system_ = std::move(sys->text);
    const size_t loop_first = source.find("loop.first");
    t.default_system_needs_messages_ = loop_first != std::string::npos && loop_first < sys->position;
  }
  t.source_ = std::move(source);
  return t;
}

chat_template chat_template::chatml(std::optional<std::string> default_system) {
  chat_template t;
  t.default_system_ = std::move(default_system);
  return t;
}

std::vector<chat_part> chat_template::render(const std::vector<chat_message>& messages,
                                            bool add_generation_prompt) const {
  std::vector<chat_part> out;
  auto control = [&](std::string_view marker) { out.push_back({std::string(marker), true}); };
  auto plain = [&](std::string_view text) {
    if (text.empty()) return;
    if (!out.empty() && !out.back().control) out.back().text += text;
    else out.push_back({std::string(text), false});
  };
  auto emit = [&](std::string_view role, std::string_view content) {
    control(im_start);
    plain(role);
    plain("\n");
    plain(content);
    control(im_end);
    plain("\n");
  };
  const bool starts_with_system = !messages.empty() && messages.front().role == "system";
  if (default_system_ && !starts_with_system && (!messages.empty() || !default_system_needs_messages_))
    emit("system", *default_system_);
  for (const chat_message& m : messages) emit(m.role, m.content);
  if (add_generation_prompt) {
    control(im_start);
    plain("assistant\n");
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
