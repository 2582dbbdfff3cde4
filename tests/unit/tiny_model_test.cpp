// Tests for the tiny Llama GGUF generator (tools/tiny_model).
#include "tools/tiny_model/tiny_model.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "kernels/format/quant_ref.hpp"
#include "runtime/gguf/gguf_file.hpp"

namespace fw {
namespace {

std::shared_ptr<const gguf_file> open_image(const tiny_model_spec& spec) {
  auto image = make_tiny_model(spec);
  EXPECT_TRUE(image) << image.err().what();
  if (!image) return nullptr;
  auto f = gguf_file::from_bytes(*image, "tiny");
  EXPECT_TRUE(f) << f.err().what();
  return f ? *f : nullptr;
}

void expect_tensor(const gguf_file& f, const std::string& name, std::vector<uint64_t> ne,
                   ggml_type type) {
  const gguf_tensor_info* t = f.find_tensor(name);
  ASSERT_NE(t, nullptr) << name;
  EXPECT_EQ(t->ne, ne) << name;
  EXPECT_EQ(t->type, type) << name;
  EXPECT_EQ(t->n_bytes, row_bytes(type_traits(type), ne[0]) * t->rows()) << name;
}

class tiny_model_types : public ::testing::TestWithParam<ggml_type> {};

TEST_P(tiny_model_types, has_every_tensor_with_its_shape_and_type) {
  tiny_model_spec spec;
  spec.weight_type = GetParam();
  auto f = open_image(spec);
  ASSERT_TRUE(f);
  const uint64_t n_vocab = tiny_model_tokens().size();
  const uint64_t e = 64, kv = 32, ff = 128;
  const ggml_type w = spec.weight_type;
  EXPECT_EQ(f->tensors().size(), 2u + 9u * 2u);
  expect_tensor(*f, "token_embd.weight", {e, n_vocab}, w);
  for (int i = 0; i < 2; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    expect_tensor(*f, p + "attn_norm.weight", {e}, ggml_type::f32);
    expect_tensor(*f, p + "attn_q.weight", {e, e}, w);
    expect_tensor(*f, p + "attn_k.weight", {e, kv}, w);
    expect_tensor(*f, p + "attn_v.weight", {e, kv}, w);
    expect_tensor(*f, p + "attn_output.weight", {e, e}, w);
    expect_tensor(*f, p + "ffn_norm.weight", {e}, ggml_type::f32);
    expect_tensor(*f, p + "ffn_gate.weight", {e, ff}, w);
    expect_tensor(*f, p + "ffn_up.weight", {e, ff}, w);
    expect_tensor(*f, p + "ffn_down.weight", {ff, e}, w);
  }
  expect_tensor(*f, "output_norm.weight", {e}, ggml_type::f32);
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);

  // Weights decode to sane values: norms near 1, matrices with std ~ 1/sqrt(fan_in).
  const gguf_tensor_info* q = f->find_tensor("blk.1.attn_q.weight");
  std::vector<float> v(q->n_elements());
  dequantize_row_ref(w, q->data, v.data(), static_cast<int64_t>(v.size()));
  double sum2 = 0;
  for (float x : v) sum2 += static_cast<double>(x) * x;
  EXPECT_NEAR(std::sqrt(sum2 / static_cast<double>(v.size())), 0.125, 0.03);
  const float* norm = reinterpret_cast<const float*>(f->find_tensor("output_norm.weight")->data);
  for (int i = 0; i < 64; ++i) EXPECT_NEAR(norm[i], 1.0f, 0.6f);
}

INSTANTIATE_TEST_SUITE_P(all, tiny_model_types,
                         ::testing::Values(ggml_type::f32, ggml_type::f16, ggml_type::bf16,
                                           ggml_type::q8_0, ggml_type::q4_0, ggml_type::q4_1),
                         [](const auto& info) {
                           return std::string(type_traits(info.param).name);
                         });

TEST(tiny_model, writes_the_llama_metadata) {
  tiny_model_spec spec;
  spec.rope_base = 5000.0f;
  auto f = open_image(spec);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_uint("llama.block_count"), 2u);
  EXPECT_EQ(f->get_uint("llama.context_length"), 256u);
  EXPECT_EQ(f->get_uint("llama.embedding_length"), 64u);
  EXPECT_EQ(f->get_uint("llama.feed_forward_length"), 128u);
  EXPECT_EQ(f->get_uint("llama.attention.head_count"), 4u);
  EXPECT_EQ(f->get_uint("llama.attention.head_count_kv"), 2u);
  EXPECT_EQ(f->get_float("llama.rope.freq_base"), 5000.0);
  EXPECT_EQ(f->find("llama.rope.freq_base")->type, gguf_type::f32);
  EXPECT_FLOAT_EQ(static_cast<float>(*f->get_float("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
  EXPECT_EQ(f->get_uint("llama.rope.dimension_count"), 16u);
  EXPECT_EQ(f->get_uint("llama.vocab_size"), tiny_model_tokens().size());
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f->get_string("tokenizer.ggml.pre"), "smollm");
  EXPECT_EQ(f->get_uint("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(f->get_uint("tokenizer.ggml.eos_token_id"), 2u);
  EXPECT_EQ(f->get_uint("tokenizer.ggml.unknown_token_id"), 0u);
  EXPECT_EQ(f->get_uint("tokenizer.ggml.padding_token_id"), 2u);
  EXPECT_EQ(f->get_bool("tokenizer.ggml.add_bos_token"), false);
  EXPECT_EQ(f->get_string("tokenizer.chat_template"), tiny_model_chat_template());
  EXPECT_NE(tiny_model_chat_template().find("<|im_start|>assistant\\n"), std::string::npos);

  const auto* tokens = f->find("tokenizer.ggml.tokens")->as_string_array();
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(*tokens, tiny_model_tokens());
  const auto* types = f->find("tokenizer.ggml.token_type")->as_int_array();
  ASSERT_NE(types, nullptr);
  EXPECT_EQ(f->find("tokenizer.ggml.token_type")->elem_type, gguf_type::i32);
  ASSERT_EQ(types->size(), tokens->size());
  EXPECT_EQ((*types)[0], 3);
  EXPECT_EQ((*types)[2], 3);
  EXPECT_EQ((*types)[3], 1);
  EXPECT_EQ(types->back(), 1);
  EXPECT_EQ(*f->find("tokenizer.ggml.merges")->as_string_array(), tiny_model_merges());
}

TEST(tiny_model, vocabulary_is_byte_level_gpt2) {
  const auto tokens = tiny_model_tokens();
  const auto merges = tiny_model_merges();
  EXPECT_EQ(tokens[0], "<|endoftext|>");
  EXPECT_EQ(tokens[1], "<|im_start|>");
  EXPECT_EQ(tokens[2], "<|im_end|>");
  EXPECT_EQ(tokens[tiny_model_first_byte_id + 'A'], "A");
  EXPECT_EQ(tokens[tiny_model_first_byte_id + ' '], "\xc4\xa0");   // U+0120 'Ġ'
  EXPECT_EQ(tokens[tiny_model_first_byte_id + '\n'], "\xc4\x8a");  // U+010A 'Ċ'
  EXPECT_EQ(tokens[tiny_model_first_byte_id + 0], "\xc4\x80");     // U+0100
  EXPECT_EQ(tokens[tiny_model_first_byte_id + 0xad], "\xc5\x83");  // soft hyphen -> U+0143
  EXPECT_EQ(tokens[tiny_model_first_byte_id + 0xff], "\xc3\xbf");  // printable: itself
  EXPECT_GE(merges.size(), 24u);
  ASSERT_EQ(tokens.size(), 259u + merges.size());
  EXPECT_EQ(std::set<std::string>(tokens.begin(), tokens.end()).size(), tokens.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto space = merges[i].find(' ');
    ASSERT_NE(space, std::string::npos);
    const std::string a = merges[i].substr(0, space), b = merges[i].substr(space + 1);
    const auto before = tokens.begin() + static_cast<ptrdiff_t>(259 + i);
    EXPECT_NE(std::find(tokens.begin(), before, a), before) << merges[i];
    EXPECT_NE(std::find(tokens.begin(), before, b), before) << merges[i];
    EXPECT_EQ(tokens[259 + i], a + b);
  }
}

TEST(tiny_model, same_seed_gives_same_bytes) {
  tiny_model_spec spec;
  spec.weight_type = ggml_type::q4_1;
  auto a = make_tiny_model(spec);
  auto b = make_tiny_model(spec);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
  spec.seed = 2;
  auto c = make_tiny_model(spec);
  ASSERT_TRUE(c);
  EXPECT_NE(*a, *c);
}

TEST(tiny_model, untied_output_and_other_shapes) {
  tiny_model_spec spec;
  spec.tied_output = false;
  spec.n_layer = 3;
  spec.n_embd = 96;
  spec.n_head = 6;
  spec.n_head_kv = 3;
  spec.weight_type = ggml_type::q8_0;
  auto f = open_image(spec);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->tensors().size(), 3u + 9u * 3u);
  expect_tensor(*f, "output.weight", {96, tiny_model_tokens().size()}, ggml_type::q8_0);
  expect_tensor(*f, "blk.2.attn_k.weight", {96, 48}, ggml_type::q8_0);
  EXPECT_EQ(f->get_uint("llama.rope.dimension_count"), 16u);
}

TEST(tiny_model, rejects_inconsistent_specs) {
  tiny_model_spec spec;
  spec.n_embd = 48;  // fine for f32 (head_dim 12) ...
  EXPECT_TRUE(make_tiny_model(spec));
  spec.weight_type = ggml_type::q4_0;  // ... but not whole q4_0 blocks
  auto r = make_tiny_model(spec);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().code, errc::invalid_argument);
  spec = {};
  spec.n_head_kv = 3;
  EXPECT_FALSE(make_tiny_model(spec));
  spec = {};
  spec.n_layer = 0;
  EXPECT_FALSE(make_tiny_model(spec));
}

TEST(tiny_model, writes_a_file_that_opens) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("fw_tiny_" + std::to_string(::getpid()) + ".gguf")).string();
  tiny_model_spec spec;
  spec.weight_type = ggml_type::q4_0;
  ASSERT_TRUE(write_tiny_model(spec, path));
  auto f = gguf_file::open(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(f) << f.err().what();
  EXPECT_EQ((*f)->file_size(), make_tiny_model(spec)->size());
  EXPECT_FALSE(write_tiny_model(spec, "/nonexistent/dir/tiny.gguf"));
}

}  // namespace
}  // namespace fw
