// model: everything loaded from one GGUF file that does not depend on where it runs: the mapped
// file, hyper-parameters, weight views, tokenizer and chat template. Backends are built over a
// model and must not outlive it. Thread-safety: immutable after load; share freely.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "runtime/text/chat_template.hpp"
#include "runtime/base/expected.hpp"
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/model/llama_weights.hpp"
#include "runtime/model/model_config.hpp"
#include "runtime/text/tokenizer.hpp"

namespace fw {

class model {
 public:
  /// Opens, validates and maps a GGUF model. Errors name the file and the problem.
  static expected<std::shared_ptr<const model>> load(const std::string& path,
                                                     const weight_load_options& options = {});

  const gguf_file& file() const { return *file_; }
  const model_config& config() const { return config_; }
  const llama_weights& weights() const { return weights_; }
  const tokenizer& vocab() const { return tokenizer_; }
  /// The chat template, or the reason it is unavailable (unsupported/missing).
  const expected<chat_template>& chat() const { return chat_; }

  /// What kind of model this is, for `flywheel info` and the console banner, e.g.
  /// "qwen2 (neox rope, q/k/v biases); vocabulary spm, 32000 tokens; chat template chatml".
  std::string describe() const;

 private:
  model(std::shared_ptr<const gguf_file> f, model_config c, llama_weights w, tokenizer t,
        expected<chat_template> ct)
      : file_(std::move(f)), config_(std::move(c)), weights_(std::move(w)),
        tokenizer_(std::move(t)), chat_(std::move(ct)) {}

  std::shared_ptr<const gguf_file> file_;
  model_config config_;
  llama_weights weights_;
  tokenizer tokenizer_;
  expected<chat_template> chat_;
};

}  // namespace fw
