#include "runtime/model/model_config.hpp"

namespace fw {
namespace {

expected<uint32_t> required_u32(const gguf_file& f, const std::string& key) {
  auto v = f.get_uint(key);
  if (!v) return make_error(errc::malformed_file, f.path() + ": missing or non-integer metadata '" + key + "'");
  if (*v == 0 || *v > (1u << 30))
    return make_error(errc::malformed_file, f.path() + ": metadata '" + key + "' = " + std::to_string(*v) + " is out of range");
  return static_cast<uint32_t>(*v);
}

constexpr model_arch_traits archs[] = {
    {"llama", rope_style::norm, false},  // also Mistral files
    {"qwen2", rope_style::neox, false},
    {"qwen3", rope_style::neox, true},
    {"phi3", rope_style::neox, false},
};

}  // namespace

const model_arch_traits* find_model_arch(std::string_view name) {
  for (const auto& a : archs)
    if (name == a.name) return &a;
  return nullptr;
}

std::string supported_model_archs() {
  std::string s;
  for (const auto& a : archs) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

expected<model_config> model_config::from_gguf(const gguf_file& f) {
  model_config c;
  auto arch = f.get_string("general.architecture");
  if (!arch) return make_error(errc::malformed_file, f.path() + ": missing 'general.architecture'");
  const model_arch_traits* traits = find_model_arch(*arch);
  if (!traits)
    return make_error(errc::unsupported, f.path() + ": architecture '" + *arch + "' is not supported (supported: " +
                                             supported_model_archs() + ")");
  c.architecture = *arch;
  c.rope = traits->rope;
  c.qk_norm = traits->qk_norm;
  c.name = f.get_string("general.name").value_or("");
  const std::string p = c.architecture + ".";
  auto get = [&](const char* key, uint32_t& out) -> expected<void> {
    auto v = required_u32(f, p + key);
    if (!v) return v.err();
    out = *v;
    return {};
  };
  for (auto [key, dst] : {std::pair{"block_count", &c.n_layer}, {"context_length", &c.n_ctx_train},
                          {"embedding_length", &c.n_embd}, {"feed_forward_length", &c.n_ff},
                          {"attention.head_count", &c.n_head}}) {
    if (auto r = get(key, *dst); !r) return r.err();
  }
  c.n_head_kv = f.get_uint(p + "attention.head_count_kv").value_or(c.n_head);
  if (c.n_head_kv == 0 || c.n_head % c.n_head_kv != 0)
    return make_error(errc::malformed_file, f.path() + ": head_count " + std::to_string(c.n_head) +
                      " is not a multiple of head_count_kv " + std::to_string(c.n_head_kv));
  if (auto kl = f.get_uint(p + "attention.key_length")) {
    const auto vl = f.get_uint(p + "attention.value_length").value_or(*kl);
    if (*kl == 0 || *kl > 1024 || vl != *kl)
      return make_error(errc::unsupported, f.path() + ": attention key_length " + std::to_string(*kl) +
                                               " / value_length " + std::to_string(vl) +
                                               " (flywheel runs equal key and value head sizes up to 1024)");
    c.head_dim = static_cast<uint32_t>(*kl);
  } else {
    if (c.n_embd % c.n_head != 0)
      return make_error(errc::malformed_file, f.path() + ": embedding_length " + std::to_string(c.n_embd) +
                        " is not a multiple of head_count " + std::to_string(c.n_head));
    c.head_dim = c.n_embd / c.n_head;
  }
  if (c.head_dim % 2 != 0)
    return make_error(errc::malformed_file, f.path() + ": head size " + std::to_string(c.head_dim) + " is odd");
  c.n_rot = f.get_uint(p + "rope.dimension_count").value_or(c.head_dim);
  if (c.n_rot == 0 || c.n_rot > c.head_dim || c.n_rot % 2 != 0)
    return make_error(errc::malformed_file, f.path() + ": rope.dimension_count " + std::to_string(c.n_rot) + " is invalid");
  c.rms_eps = static_cast<float>(f.get_float(p + "attention.layer_norm_rms_epsilon").value_or(1e-5));
  c.rope_freq_base = static_cast<float>(f.get_float(p + "rope.freq_base").value_or(10000.0));
  if (auto scale = f.get_float(p + "rope.scaling.factor"); scale && *scale > 0) {
    auto type = f.get_string(p + "rope.scaling.type").value_or("linear");
    if (type != "linear" && type != "none")
      return make_error(errc::unsupported, f.path() + ": rope scaling type '" + type +
                                               "' is not supported (supported: linear, none)");
    if (type == "linear") c.rope_freq_scale = static_cast<float>(1.0 / *scale);
  }
  // Phi-3's 128k variants carry LongRoPE factor pairs and an attention scale: refused by name.
  // (Llama 3.1's single rope_freqs table is supported: llama_weights reads it.)
  if (f.find_tensor("rope_factors_long.weight") || f.find_tensor("rope_factors_short.weight"))
    return make_error(errc::unsupported, f.path() + ": LongRoPE (rope_factors_long / rope_factors_short, "
                                                    "Phi-3 128k) is not supported");
  if (auto w = f.get_uint(p + "attention.sliding_window"); w && *w > 0) c.sliding_window = static_cast<uint32_t>(*w);
  if (auto v = f.get_uint(p + "vocab_size")) {
    c.n_vocab = static_cast<uint32_t>(*v);
  } else if (const gguf_value* tokens = f.find("tokenizer.ggml.tokens")) {
    c.n_vocab = static_cast<uint32_t>(tokens->array_size());
  }
  if (c.n_vocab == 0) return make_error(errc::malformed_file, f.path() + ": vocabulary size unknown");
  return c;
}

}  // namespace fw
