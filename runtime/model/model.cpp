#include "runtime/model/model.hpp"

#include "kernels/format/fw_formats.hpp"

namespace fw {

expected<std::shared_ptr<const model>> model::load(const std::string& path, const weight_load_options& options) {
  auto file = gguf_file::open(path);
  if (!file) return file.err();
  // A file from another flywheel quantizer version: refused by name, before anything else.
  if (const auto* v = (*file)->find(fw_quant_version_key)) {
    const auto ver = v->as_uint();
    if (!ver || *ver != fw_quant_version)
      return make_error(errc::unsupported,
                        path + ": flywheel quantization format version " + (ver ? std::to_string(*ver) : std::string("?")) +
                            " (" + fw_quant_version_key + "); this build reads version " +
                            std::to_string(fw_quant_version) + ": re-quantize with this flywheel");
  }
  auto config = model_config::from_gguf(**file);
  if (!config) return config.err();
  if (options.max_layers > 0 && options.max_layers < config->n_layer) config->n_layer = options.max_layers;
  auto weights = llama_weights::from_gguf(*file, *config, options);
  if (!weights) return weights.err();
  auto vocab = tokenizer::from_gguf(**file);
  if (!vocab) return vocab.err();
  if (vocab->n_vocab() != static_cast<int32_t>(config->n_vocab))
    return make_error(errc::malformed_file, path + ": tokenizer has " + std::to_string(vocab->n_vocab()) +
                      " tokens but the model's vocabulary size is " + std::to_string(config->n_vocab));
  auto chat = chat_template::from_gguf(**file);
  return std::shared_ptr<const model>(new model(std::move(*file), std::move(*config), std::move(*weights),
                                                std::move(*vocab), std::move(chat)));
}

std::string model::describe() const {
  const auto& c = config_;
  std::string features = c.rope == rope_style::neox ? "neox rope" : "adjacent-pair rope";
  const auto& l0 = weights_.layers.front();
  if (l0.qkv_bias) features += ", q/k/v biases";
  if (l0.q_norm) features += ", per-head q/k norms";
  if (l0.wk.data == l0.wq.data + l0.wq.n * l0.wq.row_bytes && file_->find_tensor("blk.0.attn_qkv.weight"))
    features += ", fused qkv and gate|up tensors";
  if (weights_.rope_freqs) features += ", rope frequency factors";
  if (c.q_dim() != c.n_embd) features += ", q width " + std::to_string(c.q_dim());
  if (c.sliding_window) features += ", sliding window " + std::to_string(c.sliding_window) + " (attended in full)";
  std::string s = c.architecture + " (" + features + "); vocabulary " + std::string(tokenizer_.kind_name());
  if (!tokenizer_.pre_name().empty()) s += ", pre-tokenizer " + std::string(tokenizer_.pre_name());
  s += ", " + std::to_string(tokenizer_.n_vocab()) + " tokens; chat template ";
  s += chat_ ? std::string(chat_->family()) : "none (" + chat_.err().message + ")";
  return s;
}

}  // namespace fw
