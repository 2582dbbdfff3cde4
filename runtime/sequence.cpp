#include "runtime/sequence.hpp"

namespace fw {

sequence::sequence(uint64_t id, std::vector<int32_t> prompt, const sampling_params& params,
                   int32_t n_vocab, uint32_t budget)
    : id_(id),
      params_(params),
      sampler_(params, n_vocab),
      history_(std::move(prompt)),
      prompt_size_(history_.size()),
      budget_(budget),
      stops_(params.stop) {}

token_outcome sequence::advance(std::span<const float> logits, const tokenizer& vocab) {
  token_outcome out;
  if (finished_) {
    out.finished = true;
    return out;
  }
  const int32_t tok = sampler_.sample(logits, history_);
  auto finish = [&](const char* reason) {
    finished_ = true;
    out.finished = true;
    out.finish_reason = reason;
    if (!stops_.stopped()) out.text += stops_.feed(utf8_.flush()).emit + stops_.flush();
  };
  if (vocab.is_eog(tok) && !params_.ignore_eos) {
    finish("stop");
    return out;
  }
  out.token = tok;
  history_.push_back(tok);
  generated_.push_back(tok);
  auto fed = stops_.feed(utf8_.push(vocab.token_to_piece(tok)));
  out.text = std::move(fed.emit);
  if (fed.stopped) {
    finish("stop");
  } else if (generated_.size() >= budget_) {
    finish("length");
  }
  return out;
}

}  // namespace fw
