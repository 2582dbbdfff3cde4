// chat_template: turns a conversation into the prompt text a model was trained on.
// There is no Jinja engine here: the template source is recognised, not executed. Supported is
// ChatML (the source contains "<|im_start|>"), rendered as
//   "<|im_start|>" role "\n" content "<|im_end|>\n"   per message, then
//   "<|im_start|>assistant\n"                           when a generation prompt is asked for,
// including a default system message embedded in the template, e.g. SmolLM2's
//   {% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are ...
//   <|im_end|>\n' }}{% endif %}
// which is emitted when the first message is not a system message, byte for byte as
// transformers / llama.cpp's Jinja renderer produce it. Anything else is errc::unsupported.
// Thread-safety: immutable value; apply() is const.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/expected.hpp"

namespace fw {

class gguf_file;

struct chat_message {
  std::string role;
  std::string content;
};

/// One piece of a rendered conversation: the template's own control-token text (e.g.
/// "<|im_start|>") or text that must be tokenized as plain text (roles, contents, newlines).
struct chat_part {
  std::string text;
  bool control = false;
};

class chat_template {
 public:
  /// Reads tokenizer.chat_template; errc::unsupported when absent or not recognised.
  static expected<chat_template> from_gguf(const gguf_file& file);
  /// Recognises a Jinja template source; errc::unsupported naming its first ~60 characters.
  static expected<chat_template> from_source(std::string source);
  /// Plain ChatML, optionally with a default system prompt.
  static chat_template chatml(std::optional<std::string> default_system = std::nullopt);

  /// Renders the conversation; add_generation_prompt appends the assistant header.
  [[nodiscard]] std::string apply(const std::vector<chat_message>& messages,
                                  bool add_generation_prompt) const;
  /// The same conversation as parts: control parts are only the template's markers, never text
  /// from a message, so a caller can tokenize user text without parsing special tokens
  /// (encode_chat in chat_encoding.hpp). Adjacent plain parts are merged; concatenating every
  /// part's text gives apply().
  [[nodiscard]] std::vector<chat_part> render(const std::vector<chat_message>& messages,
                                              bool add_generation_prompt) const;

  [[nodiscard]] const std::string& source() const { return source_; }
  /// The system prompt inserted when the conversation does not start with one, if any.
  [[nodiscard]] const std::optional<std::string>& default_system() const { return default_system_; }

 private:
  chat_template() = default;

  std::string source_;
  std::optional<std::string> default_system_;
  bool default_system_needs_messages_ = true;  ///< emitted inside the message loop (loop.first)
};

}  // namespace fw
