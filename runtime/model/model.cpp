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

}  // namespace fw
