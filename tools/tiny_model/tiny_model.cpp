#include "tools/tiny_model/tiny_model.hpp"

#include "kernels/format/fw_formats.hpp"

#include <algorithm>

#include <cmath>
#include <cstring>
#include <random>

#include "kernels/format/quant_ref.hpp"
#include "runtime/gguf/gguf_writer.hpp"

namespace fw {
namespace {

// Common English pairs; each merge's parts are byte tokens or earlier merges.
constexpr const char* merge_list[] = {
    "Ġ t",  "Ġ a",  "i n",   "h e",   "Ġ Ġ",  "Ġt he", "e r",  "o n",  "Ġ s",   "r e",
    "Ġ w",  "Ġ o",  "a t",   "e n",   "i s",  "o r",   "Ġ c",  "e s",  "i t",   "Ġ b",
    "Ġ f",  "a n",  "Ġ i",   "Ġ h",   "Ġ m",  "in g",  "Ġ p",  "o u",  "Ġa n",  "Ġan d",
    "Ġo f", "Ġt o", "Ġi s",  "Ġi n",  "l l",  "Ġ d",   "e d",  "Ċ Ċ",  "Ġh e",  "H e",
    "ll o", "He llo", "Ġw or", "l d", "Ġwor ld", "Ġ l", "Ġ y",  "Ġy ou", "Ġ n",
};

// GPT-2 bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 + n in order.
std::vector<uint32_t> byte_code_points() {
  std::vector<uint32_t> cp(256, 0);
  uint32_t n = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae);
    cp[b] = printable ? b : 256 + n++;
  }
  return cp;
}

std::string utf8(uint32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xc0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    s += static_cast<char>(0xe0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (c & 0x3f));
  }
  return s;
}

// Approximately standard normal values from a seeded engine. Sums of 12 uniforms use only exact
// IEEE arithmetic, so a seed gives the same weights on every platform and standard library
// (std::normal_distribution's algorithm is implementation-defined).
class normal_source {
 public:
  explicit normal_source(uint64_t seed, bool fast = false) : rng_(seed), fast_(fast) {}
  float next() {
    if (fast_) {  // uniform on [-sqrt 3, sqrt 3): mean 0, variance 1, exact arithmetic
      return static_cast<float>((static_cast<double>(rng_() >> 11) * 0x1.0p-53 * 2.0 - 1.0) * 1.7320508075688772);
    }
    double s = 0.0;
    for (int i = 0; i < 12; ++i) s += static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    return static_cast<float>(s - 6.0);
  }

 private:
  std::mt19937_64 rng_;
  bool fast_;
};

uint32_t file_type_of(ggml_type t) {  // llama_ftype numbering
  switch (t) {
    case ggml_type::f32: return 0;
    case ggml_type::f16: return 1;
    case ggml_type::q4_0: return 2;
    case ggml_type::q4_1: return 3;
    case ggml_type::q8_0: return 7;
    case ggml_type::bf16: return 32;
    default: return 0;  // flywheel's formats have no llama_ftype
  }
}

std::vector<uint8_t> encode(ggml_type type, const std::vector<float>& values) {
  std::vector<uint8_t> out(row_bytes(type_traits(type), values.size()));
  quantize_row_ref(type, values.data(), out.data(), static_cast<int64_t>(values.size()));
  return out;
}

/// Random quantized blocks straight from random bytes (no float weights made and rounded): the
/// nibbles / int8 values uniform, every block's scale set so that the weights' standard deviation
/// is `sd`. For large shapes (a Llama-3-8B file in seconds instead of minutes); empty for the
/// float formats, which take the float path.
std::vector<uint8_t> random_blocks(ggml_type t, uint64_t n, float sd, uint64_t& state) {
  const auto tr = type_traits(t);
  uint32_t block = 0, group = 0;  // bytes per block; fw_w4a16 group size
  float d = 0;
  switch (t) {
    case ggml_type::q4_0: block = 18, d = sd / 4.61f; break;  // (q - 8), q uniform in 0..15: sd 4.61
    case ggml_type::q4_1: block = 20, d = sd / 4.61f; break;
    case ggml_type::q8_0: block = 34, d = sd / 73.9f; break;  // int8 uniform: sd 73.9
    case ggml_type::fw_w4a16_g32: group = 32; break;
    case ggml_type::fw_w4a16_g64: group = 64; break;
    case ggml_type::fw_w4a16_g128: group = 128; break;
    default: return {};
  }
  if (group) block = 4 + group / 2, d = sd / 4.61f;
  std::vector<uint8_t> out(row_bytes(tr, n));
  for (size_t i = 0; i < out.size(); i += 8) {  // splitmix64
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::memcpy(out.data() + i, &z, std::min<size_t>(8, out.size() - i));
  }
  const uint16_t dh = fp32_to_fp16(d), mh = fp32_to_fp16(-7.5f * d);
  for (size_t b = 0; b + block <= out.size(); b += block) {
    std::memcpy(out.data() + b, &dh, 2);
    if (t != ggml_type::q4_0 && t != ggml_type::q8_0) std::memcpy(out.data() + b + 2, &mh, 2);  // the offset
  }
  return out;
}

}  // namespace

std::vector<std::string> tiny_model_merges() {
  return {std::begin(merge_list), std::end(merge_list)};
}

std::vector<std::string> tiny_model_tokens() {
  std::vector<std::string> tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  for (uint32_t cp : byte_code_points()) tokens.push_back(utf8(cp));
  for (const auto& m : tiny_model_merges()) {
    const auto space = m.find(' ');
    tokens.push_back(m.substr(0, space) + m.substr(space + 1));
  }
  return tokens;
}

tiny_spm_vocab tiny_model_spm_vocab() {
  tiny_spm_vocab v;
  auto add = [&](std::string t, float score, int32_t type) {
    v.tokens.push_back(std::move(t));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0.f, 2);
  add("<s>", 0.f, 3);
  add("</s>", 0.f, 3);
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) add(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">", 0.f, 6);
  // Pieces, most frequent first (a higher score merges first); U+2581 stands for a space.
  static const char* pieces[] = {
      "\u2581", "e", "t", "a", "o", "i", "n", "s", "h", "r", "l", "d", "u", "c", "m", "w", "y", "f", "g", "p",
      "b", ".", ",", "\u2581t", "he", "\u2581the", "in", "er", "\u2581a", "on", "re", "\u2581s", "at", "en",
      "\u2581w", "\u2581o", "is", "or", "\u2581c", "es", "it", "\u2581b", "an", "\u2581f", "ing", "\u2581and",
      "\u2581of", "\u2581to", "\u2581is", "ll", "\u2581H", "H", "ello", "\u2581Hello", "\u2581world", "or", "ld",
      "\u2581you", "\u2581in", "\u2581th", "\u2581he"};
  float score = -1.f;
  std::vector<std::string> seen;
  for (const char* p : pieces) {
    const std::string t = p;  // "\u2581" is UTF-8 E2 96 81 in the literal
    if (std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
    seen.push_back(t);
    add(t, score, 1);
    score -= 1.f;
  }
  return v;
}

const std::string& tiny_model_llama2_template() {
  static const std::string tmpl =
      "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
      "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
      "{% for message in loop_messages %}{% if loop.index0 == 0 and system_message != false %}{% set content = "
      "'<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = "
      "message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + "
      "' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}"
      "{% endfor %}";
  return tmpl;
}

const std::string& tiny_model_phi3_template() {
  static const std::string tmpl =
      "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\\n' + message['content'] + "
      "'<|end|>\\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\\n' + message['content'] + '<|end|>\\n'}}"
      "{% elif message['role'] == 'assistant' %}{{'<|assistant|>\\n' + message['content'] + '<|end|>\\n'}}{% endif %}"
      "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}";
  return tmpl;
}

const std::string& tiny_model_chat_template() {
  static const std::string tmpl =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
      "{{ '<|im_start|>assistant\\n' }}{% endif %}";
  return tmpl;
}

namespace {

expected<gguf_writer> build(const tiny_model_spec& spec) {
  auto bad = [](const std::string& what) { return make_error(errc::invalid_argument, "tiny model: " + what); };
  if (spec.n_embd <= 0 || spec.n_layer <= 0 || spec.n_head <= 0 || spec.n_head_kv <= 0 ||
      spec.n_ff <= 0 || spec.n_ctx <= 0)
    return bad("all sizes must be positive");
  if (spec.head_dim == 0 && spec.n_embd % spec.n_head != 0) return bad("n_embd must be a multiple of n_head");
  if (spec.n_head % spec.n_head_kv != 0) return bad("n_head must be a multiple of n_head_kv");
  const uint32_t block = type_traits(spec.weight_type).block_size;
  if (spec.n_embd % block != 0 || spec.n_ff % block != 0)
    return bad("n_embd and n_ff must be multiples of " + std::to_string(block) + " for " +
               std::string(type_traits(spec.weight_type).name));

  const bool spm = spec.vocab == "spm";
  if (!spm && spec.vocab != "bpe") return bad("vocab must be bpe or spm");
  const std::string& arch = spec.arch;
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3" && arch != "phi3")
    return bad("arch must be llama, qwen2, qwen3 or phi3");
  std::vector<std::string> tokens;
  std::vector<int32_t> token_type;
  std::vector<float> scores;
  if (spm) {
    auto v = tiny_model_spm_vocab();
    tokens = std::move(v.tokens), token_type = std::move(v.types), scores = std::move(v.scores);
  } else {
    tokens = tiny_model_tokens();
    token_type.assign(tokens.size(), 1);
    for (int i = 0; i < tiny_model_first_byte_id; ++i) token_type[i] = 3;
  }
  if (arch == "phi3") {
    // Phi-3's chat tokens (llama.cpp looks "<|endoftext|>" up in any model named phi3).
    for (const char* t : {"<|endoftext|>", "<|assistant|>", "<|end|>", "<|user|>", "<|system|>"}) {
      tokens.push_back(t);
      token_type.push_back(3);
      if (spm) scores.push_back(0.f);
    }
  }
  if (spec.vocab_size > 0) {
    if (static_cast<size_t>(spec.vocab_size) < tokens.size())
      return bad("vocab_size must be at least " + std::to_string(tokens.size()));
    // Filler tokens no text produces (type unused), so encodings are those of the small vocab.
    for (int i = static_cast<int>(tokens.size()); i < spec.vocab_size; ++i) {
      tokens.push_back("<|fw_unused_" + std::to_string(i) + "|>");
      token_type.push_back(5);
      if (spm) scores.push_back(-1e9f);
    }
  }
  const auto n_vocab = static_cast<uint64_t>(tokens.size());
  const auto n_embd = static_cast<uint64_t>(spec.n_embd);
  const auto n_ff = static_cast<uint64_t>(spec.n_ff);
  if (spec.head_dim < 0 || spec.head_dim % 2 != 0) return bad("head_dim must be even");
  const uint64_t head_dim = spec.head_dim > 0 ? static_cast<uint64_t>(spec.head_dim) : n_embd / spec.n_head;
  const uint64_t n_q = head_dim * spec.n_head;
  const uint64_t n_kv = head_dim * spec.n_head_kv;
  const std::string k = arch + ".";

  gguf_writer w;
  w.add_string("general.architecture", arch);
  w.add_string("general.type", "model");
  w.add_string("general.name", "flywheel tiny " + arch);
  w.add_uint32(k + "block_count", static_cast<uint32_t>(spec.n_layer));
  w.add_uint32(k + "context_length", static_cast<uint32_t>(spec.n_ctx));
  w.add_uint32(k + "embedding_length", static_cast<uint32_t>(n_embd));
  w.add_uint32(k + "feed_forward_length", static_cast<uint32_t>(n_ff));
  w.add_uint32(k + "attention.head_count", static_cast<uint32_t>(spec.n_head));
  w.add_uint32(k + "attention.head_count_kv", static_cast<uint32_t>(spec.n_head_kv));
  if (spec.head_dim > 0) {
    w.add_uint32(k + "attention.key_length", static_cast<uint32_t>(head_dim));
    w.add_uint32(k + "attention.value_length", static_cast<uint32_t>(head_dim));
  }
  if (spec.sliding_window > 0) w.add_uint32(k + "attention.sliding_window", static_cast<uint32_t>(spec.sliding_window));
  w.add_float32(k + "rope.freq_base", spec.rope_base);
  w.add_float32(k + "attention.layer_norm_rms_epsilon", 1e-5f);
  w.add_uint32("general.file_type", file_type_of(spec.weight_type));
  if (arch == "llama") w.add_uint32(k + "vocab_size", static_cast<uint32_t>(n_vocab));
  w.add_uint32(k + "rope.dimension_count", static_cast<uint32_t>(head_dim));
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_int32_array("tokenizer.ggml.token_type", token_type);
  if (spm) {
    w.add_string("tokenizer.ggml.model", "llama");
    w.add_string("tokenizer.ggml.pre", "default");
    w.add_float32_array("tokenizer.ggml.scores", scores);
    w.add_uint32("tokenizer.ggml.bos_token_id", 1);
    w.add_uint32("tokenizer.ggml.eos_token_id", 2);
    w.add_uint32("tokenizer.ggml.unknown_token_id", 0);
    w.add_bool("tokenizer.ggml.add_bos_token", true);
    w.add_bool("tokenizer.ggml.add_eos_token", false);
    w.add_string("tokenizer.chat_template", arch == "phi3" ? tiny_model_phi3_template() : tiny_model_llama2_template());
  } else {
    w.add_bool("tokenizer.ggml.add_space_prefix", false);
    w.add_bool("tokenizer.ggml.add_bos_token", false);
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", "smollm");
    w.add_string_array("tokenizer.ggml.merges", tiny_model_merges());
    w.add_uint32("tokenizer.ggml.bos_token_id", tiny_model_im_start_id);
    w.add_uint32("tokenizer.ggml.eos_token_id", tiny_model_im_end_id);
    w.add_uint32("tokenizer.ggml.unknown_token_id", tiny_model_eot_id);
    w.add_uint32("tokenizer.ggml.padding_token_id", tiny_model_im_end_id);
    w.add_string("tokenizer.chat_template", tiny_model_chat_template());
  }
  w.add_uint32("general.quantization_version", 2);
  if (type_traits(spec.weight_type).flywheel) {  // flywheel's own format: its version key, as `flywheel quantize` writes
    w.add_uint32(fw_quant_version_key, fw_quant_version);
    w.add_string("flywheel.quant.scheme", "w4a16");
    w.add_string("flywheel.quant.method", "round to nearest (random weights)");
  }

  normal_source rng(spec.seed, spec.fast_random);
  auto values = [&](uint64_t n, float scale) {
    std::vector<float> v(n);
    for (float& x : v) x = rng.next() * scale;
    return v;
  };
  uint64_t byte_state = spec.seed;
  auto matrix = [&](const std::string& name, uint64_t ne0, uint64_t ne1) {
    if (spec.fast_random) {
      auto blocks = random_blocks(spec.weight_type, ne0 * ne1, 1.0f / std::sqrt(static_cast<float>(ne0)), byte_state);
      if (!blocks.empty()) {
        w.add_tensor(name, {ne0, ne1}, spec.weight_type, std::move(blocks));
        return;
      }
    }
    w.add_tensor(name, {ne0, ne1}, spec.weight_type,
                 encode(spec.weight_type, values(ne0 * ne1, 1.0f / std::sqrt(static_cast<float>(ne0)))));
  };
  auto vec = [&](const std::string& name, uint64_t n, float scale) {  // biases: f32
    w.add_tensor(name, {n}, ggml_type::f32, encode(ggml_type::f32, values(n, scale)));
  };
  auto norm_n = [&](const std::string& name, uint64_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = 1.0f + 0.1f * rng.next();
    if (name.rfind("blk.", 0) == 0 && n == n_embd)
      for (int c = 0; c < std::min<int>(spec.outlier_channels, spec.n_embd); ++c) v[c] *= spec.outlier_scale;
    w.add_tensor(name, {n}, ggml_type::f32, encode(ggml_type::f32, v));
  };
  auto norm = [&](const std::string& name) { norm_n(name, n_embd); };

  matrix("token_embd.weight", n_embd, n_vocab);
  if (spec.rope_freqs) {
    std::vector<float> f(head_dim / 2);
    for (size_t i = 0; i < f.size(); ++i) f[i] = 1.0f + 0.25f * static_cast<float>(i);
    w.add_tensor("rope_freqs.weight", {head_dim / 2}, ggml_type::f32, encode(ggml_type::f32, f));
  }
  for (int i = 0; i < spec.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    norm(p + "attn_norm.weight");
    if (arch == "phi3") {
      matrix(p + "attn_qkv.weight", n_embd, n_q + 2 * n_kv);
    } else {
      matrix(p + "attn_q.weight", n_embd, n_q);
      matrix(p + "attn_k.weight", n_embd, n_kv);
      matrix(p + "attn_v.weight", n_embd, n_kv);
    }
    if (arch == "qwen2") {
      vec(p + "attn_q.bias", n_q, 0.5f);
      vec(p + "attn_k.bias", n_kv, 0.5f);
      vec(p + "attn_v.bias", n_kv, 0.5f);
    }
    if (arch == "qwen3") {
      norm_n(p + "attn_q_norm.weight", head_dim);
      norm_n(p + "attn_k_norm.weight", head_dim);
    }
    matrix(p + "attn_output.weight", n_q, n_embd);
    norm(p + "ffn_norm.weight");
    if (arch == "phi3") {
      matrix(p + "ffn_up.weight", n_embd, 2 * n_ff);
    } else {
      matrix(p + "ffn_gate.weight", n_embd, n_ff);
      matrix(p + "ffn_up.weight", n_embd, n_ff);
    }
    matrix(p + "ffn_down.weight", n_ff, n_embd);
  }
  norm("output_norm.weight");
  if (!spec.tied_output) matrix("output.weight", n_embd, n_vocab);
  return w;
}

}  // namespace

expected<std::vector<uint8_t>> make_tiny_model(const tiny_model_spec& spec) {
  auto w = build(spec);
  if (!w) return w.err();
  return w->bytes();
}

expected<void> write_tiny_model(const tiny_model_spec& spec, const std::string& path) {
  auto w = build(spec);
  if (!w) return w.err();
  return w->write(path);
}

}  // namespace fw
