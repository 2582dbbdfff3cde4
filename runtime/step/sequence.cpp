#include "runtime/step/sequence.hpp"

#include <algorithm>

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
  if (finished_) {
    token_outcome out;
    out.finished = true;
    return out;
  }
  ban_endings(vocab);
  return push(sampler_.sample(logits, history_), vocab);
}

void sequence::ban_endings(const tokenizer& vocab) {
  const bool early = generated_.size() < static_cast<size_t>(std::max(params_.min_tokens, 0));
  if (early == sampler_.has_banned()) return;
  if (!early) return sampler_.set_banned({});
  std::vector<int32_t> ids = vocab.eog_ids();
  ids.insert(ids.end(), params_.stop_token_ids.begin(), params_.stop_token_ids.end());
  sampler_.set_banned(std::move(ids));
}

bool sequence::resume(std::span<const int32_t> tokens, const tokenizer& vocab) {
  for (int32_t tok : tokens) {
    if (finished_) return false;
    (void)push(tok, vocab);  // the text was streamed before the interruption
  }
  return !finished_;
}

token_outcome sequence::push(int32_t tok, const tokenizer& vocab) {
  token_outcome out;
  auto finish = [&](const char* reason) {
    finished_ = true;
    out.finished = true;
    out.finish_reason = reason;
    if (!stops_.stopped()) out.text += stops_.feed(utf8_.flush()).emit + stops_.flush();
  };
  const auto& stop_ids = params_.stop_token_ids;
  if ((vocab.is_eog(tok) && !params_.ignore_eos) || std::find(stop_ids.begin(), stop_ids.end(), tok) != stop_ids.end()) {
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

std::vector<token_outcome> sequence::advance_speculative(std::span<const float> rows, const draft_proposal& proposal,
                                                         const tokenizer& vocab, int* accepted) {
  std::vector<token_outcome> outs;
  *accepted = 0;
  const size_t nv = static_cast<size_t>(sampler_.n_vocab());
  const size_t k = proposal.tokens.size();
  const bool greedy = params_.temperature <= 0.0f;
  for (size_t i = 0; i <= k && !finished_; ++i) {
    const std::span<const float> row = rows.subspan(i * nv, nv);
    ban_endings(vocab);  // position i is sampled after i more tokens
    if (i == k) {  // every proposal accepted: the bonus token from the last row
      outs.push_back(push(sampler_.sample(row, history_), vocab));
      break;
    }
    const int32_t d = proposal.tokens[i];
    int32_t chosen;
    bool accept;
    if (greedy) {
      chosen = sampler_.sample(row, history_);
      accept = chosen == d;
    } else {
      const std::vector<float> p = sampler_.probabilities(row, history_);
      const float q_d = proposal.probs.empty() ? 1.0f : proposal.probs[i][d];
      accept = q_d > 0.0f && sampler_.uniform() < std::min(1.0, static_cast<double>(p[d]) / q_d);
      chosen = d;
      if (!accept) {
        std::vector<float> residual(p);
        if (proposal.probs.empty()) {
          residual[d] = 0.0f;
        } else {
          for (size_t t = 0; t < nv; ++t) residual[t] = std::max(0.0f, p[t] - proposal.probs[i][t]);
        }
        chosen = sampler_.draw(residual);
        if (chosen < 0) chosen = sampler_.draw(p);  // p == q: any draw from p is exact
      }
    }
    outs.push_back(push(chosen, vocab));
    if (!accept) break;
    ++*accepted;
  }
  return outs;
}

}  // namespace fw
