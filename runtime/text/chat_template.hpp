// chat_template: turns a conversation into the prompt text a model was trained on.
// There is no Jinja engine here: the template source is recognised by its markers, not executed,
// and rendered by hand for four families, byte for byte as transformers' Jinja renderer does for
// the templates these families ship (tests/runtime/text/chat_template_test.cpp checks the real sources
// against renders made with jinja2):
//   chatml  ("<|im_start|>": Qwen2/2.5, SmolLM2, ...): "<|im_start|>" role "\n" content
//           "<|im_end|>\n" per message, "<|im_start|>assistant\n" as generation prompt, and a
//           default system message embedded in the template when the first message is not a
//           system message (Qwen2: "You are a helpful assistant", Qwen2.5: "You are Qwen, ...");
//   llama2  ("[INST]" and "<<SYS>>", Llama-2-chat): per user turn bos "[INST] " content.strip()
//           " [/INST]", the system prompt inside the first one as "<<SYS>>\n" s "\n<</SYS>>\n\n",
//           assistant turns " " content.strip() " " eos; no generation prompt;
//   mistral ("[INST]", Mistral-7B-Instruct v0.1/v0.2): bos, "[INST] " content " [/INST]",
//           assistant content eos. The template raises on a system message; flywheel puts it in
//           front of the first user message ("system\n\nuser") instead;
//   phi3    ("<|user|>", "<|assistant|>", "<|end|>"): Phi-3-mini's own (bos, user turns end with
//           "<|assistant|>\n", system messages dropped) or the Phi-3.5 form ("<|system|>" when
//           non-empty, "<|assistant|>\n" as generation prompt, else eos).
// Roles must alternate where the templates raise otherwise; flywheel renders what it is given.
// Anything else is errc::unsupported. Thread-safety: immutable value; apply() is const.
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

enum class chat_family { chatml, llama2, mistral, phi3 };

class chat_template {
 public:
  /// Reads tokenizer.chat_template (and the BOS/EOS token texts it may refer to);
  /// errc::unsupported when absent or not recognised.
  static expected<chat_template> from_gguf(const gguf_file& file);
  /// Recognises a Jinja template source; errc::unsupported naming its first ~60 characters.
  /// bos_token / eos_token: the texts the template's {{ bos_token }} / {{ eos_token }} stand for.
  static expected<chat_template> from_source(std::string source, std::string bos_token = "<s>",
                                             std::string eos_token = "</s>");
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
  [[nodiscard]] chat_family kind() const { return family_; }
  /// For `flywheel info` and the banner: "chatml", "llama2", "mistral" or "phi3".
  [[nodiscard]] std::string_view family() const;
  /// The system prompt inserted when the conversation does not start with one, if any.
  [[nodiscard]] const std::optional<std::string>& default_system() const { return default_system_; }

 private:
  chat_template() = default;

  void render_chatml(const std::vector<chat_message>& messages, bool add_generation_prompt,
                     std::vector<chat_part>& out) const;
  void render_llama2(const std::vector<chat_message>& messages, std::vector<chat_part>& out) const;
  void render_mistral(const std::vector<chat_message>& messages, std::vector<chat_part>& out) const;
  void render_phi3(const std::vector<chat_message>& messages, bool add_generation_prompt,
                   std::vector<chat_part>& out) const;

  std::string source_;
  chat_family family_ = chat_family::chatml;
  std::string bos_ = "<s>", eos_ = "</s>";
  std::optional<std::string> default_system_;
  bool default_system_needs_messages_ = true;  ///< emitted inside the message loop (loop.first)
  bool phi3_v35_ = false;                      ///< Phi-3.5 form (system, generation prompt)
};

}  // namespace fw
