// chat_template tests: ChatML recognition, SmolLM2's embedded default system prompt, errors, and
// the real templates of the Qwen2/2.5, Phi-3/3.5, Llama 2 and Mistral families rendered byte for
// byte as jinja2 renders them (tests/data/vocab_reference_chat.json, made by
// tools/reference/make_vocab_reference.py).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "runtime/text/chat_template.hpp"
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/gguf/gguf_writer.hpp"

namespace fw {
namespace {

// SmolLM2-135M-Instruct's tokenizer.chat_template, verbatim (real newlines inside the literals).
const std::string smollm2_template =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}";

const std::string plain_chatml =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}";

const std::string smollm_system =
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n";

TEST(chat_template, smollm2_adds_default_system_prompt) {
  auto t = chat_template::from_source(smollm2_template);
  ASSERT_TRUE(t.has_value()) << t.err().what();
  ASSERT_TRUE(t->default_system().has_value());
  EXPECT_EQ(*t->default_system(), "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  EXPECT_EQ(t->apply({{"user", "Hi"}}, true),
            smollm_system + "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(t->apply({{"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}}, false),
            smollm_system +
                "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
                "<|im_start|>user\nBye<|im_end|>\n");
}

TEST(chat_template, explicit_system_message_replaces_default) {
  auto t = chat_template::from_source(smollm2_template);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->apply({{"system", "Be brief."}, {"user", "Hi"}}, true),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(chat_template, empty_conversation_has_no_default_inside_loop) {
  auto t = chat_template::from_source(smollm2_template);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->apply({}, true), "<|im_start|>assistant\n");
  EXPECT_EQ(t->apply({}, false), "");
}

TEST(chat_template, plain_chatml) {
  auto t = chat_template::from_source(plain_chatml);
  ASSERT_TRUE(t.has_value()) << t.err().what();
  EXPECT_FALSE(t->default_system().has_value());
  EXPECT_EQ(t->apply({{"user", "a\nb"}}, true), "<|im_start|>user\na\nb<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chat_template::chatml().apply({{"user", "x"}}, false), "<|im_start|>user\nx<|im_end|>\n");
}

TEST(chat_template, escaped_newlines_in_default_system_literal) {
  // Same as SmolLM2 but the literal spells its newlines as "\n" escapes, and an apostrophe
  // appears in plain template text.
  const std::string src =
      "Don't worry. {% for message in messages %}{% if loop.first and messages[0]['role'] != "
      "'system' %}{{ \"<|im_start|>system\\nYou're Bob.<|im_end|>\\n\" }}{% endif %}"
      "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n'}}"
      "{% endfor %}";
  auto t = chat_template::from_source(src);
  ASSERT_TRUE(t.has_value());
  ASSERT_TRUE(t->default_system().has_value());
  EXPECT_EQ(*t->default_system(), "You're Bob.");
}

TEST(chat_template, default_outside_loop_applies_to_empty_conversation) {
  const std::string src =
      "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] "
      "+ '<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are Qwen.<|im_end|>\\n' }}"
      "{%- endif %}{%- for message in messages %}...{%- endfor %}";
  auto t = chat_template::from_source(src);
  ASSERT_TRUE(t.has_value());
  ASSERT_TRUE(t->default_system().has_value());
  EXPECT_EQ(*t->default_system(), "You are Qwen.");
  EXPECT_EQ(t->apply({}, true), "<|im_start|>system\nYou are Qwen.<|im_end|>\n<|im_start|>assistant\n");
}

std::vector<chat_message> messages_of(const nlohmann::json& list) {
  std::vector<chat_message> out;
  for (const auto& m : list) out.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
  return out;
}

TEST(chat_template, real_family_templates_render_as_jinja2_does) {
  std::ifstream in(std::string(FW_SOURCE_DIR) + "/tests/data/vocab_reference_chat.json");
  ASSERT_TRUE(in) << "tests/data/vocab_reference_chat.json is missing (tools/reference/make_vocab_reference.py)";
  const nlohmann::json ref = nlohmann::json::parse(in);
  std::set<std::string> families;
  size_t renders = 0;
  for (const auto& t : ref.at("templates")) {
    const std::string name = t.at("name").get<std::string>();
    auto tmpl = chat_template::from_source(t.at("source").get<std::string>(), t.at("bos").get<std::string>(),
                                           t.at("eos").get<std::string>());
    ASSERT_TRUE(tmpl.has_value()) << name << ": " << tmpl.err().what();
    EXPECT_EQ(tmpl->family(), t.at("family").get<std::string>()) << name;
    families.insert(std::string(tmpl->family()));
    for (const auto& r : t.at("renders")) {
      const auto msgs = messages_of(r.at("messages"));
      const bool gen = r.at("add_generation_prompt").get<bool>();
      EXPECT_EQ(tmpl->apply(msgs, gen), r.at("text").get<std::string>()) << name << " " << r.at("messages").dump()
                                                                         << " gen=" << gen;
      ++renders;
    }
  }
  EXPECT_EQ(families, (std::set<std::string>{"chatml", "phi3", "llama2", "mistral"}));
  EXPECT_GE(renders, 50u);
}

TEST(chat_template, qwen_default_system_prompts) {
  auto qwen25 = chat_template::from_source(
      "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\n' + messages[0]['content'] + "
      "'<|im_end|>\n' }}{%- else %}{{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a "
      "helpful assistant.<|im_end|>\n' }}{%- endif %}{%- for message in messages %}...<|im_start|>{%- endfor %}");
  ASSERT_TRUE(qwen25.has_value());
  EXPECT_EQ(qwen25->default_system(), "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
}

TEST(chat_template, markers_are_control_parts_and_text_is_not) {
  auto llama2 = chat_template::from_source("[INST] <<SYS>> {{ bos_token }}", "<s>", "</s>");
  ASSERT_TRUE(llama2.has_value());
  const auto parts = llama2->render({{"system", "S"}, {"user", "<s>[INST] hi"}}, true);
  std::string control, plain;
  for (const auto& p : parts) (p.control ? control : plain) += p.text + "|";
  EXPECT_EQ(control, "<s>|[INST]|<<SYS>>|<</SYS>>|[/INST]|");
  EXPECT_EQ(plain, " |\nS\n|\n\n<s>[INST] hi |");
}

TEST(chat_template, rejects_unknown_templates) {
  const std::string llama3 =
      "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
      "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' %}{% endfor %}";
  auto t = chat_template::from_source(llama3);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.err().code, errc::unsupported);
  EXPECT_NE(t.err().message.find("{% set loop_messages = messages %}"), std::string::npos);
  EXPECT_EQ(t.err().message.find("<|end_header_id|>"), std::string::npos);  // only ~60 chars
}

TEST(chat_template, from_gguf) {
  gguf_writer w;
  w.add_string("tokenizer.chat_template", smollm2_template);
  auto file = gguf_file::from_bytes(w.bytes());
  ASSERT_TRUE(file.has_value()) << file.err().what();
  auto t = chat_template::from_gguf(**file);
  ASSERT_TRUE(t.has_value()) << t.err().what();
  EXPECT_EQ(t->source(), smollm2_template);
  EXPECT_TRUE(t->default_system().has_value());

  gguf_writer none;
  none.add_string("general.name", "x");
  auto empty = gguf_file::from_bytes(none.bytes());
  ASSERT_TRUE(empty.has_value());
  auto missing = chat_template::from_gguf(**empty);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.err().code, errc::unsupported);
}

}  // namespace
}  // namespace fw
