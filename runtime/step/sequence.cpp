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
      stops_(params.stop) {
  if (params.json_object) json_.emplace();
}

token_outcome sequence::advance(std::span<const float> logits, const tokenizer& vocab) {
  if (finished_) {
    token_outcome out;
    out.finished = true;
    return out;
  }
  if (json_) constrain_json(vocab);
  else if (!params_.choices.empty()) constrain_choice(vocab);
  else ban_endings(vocab);
  return push(sampler_.sample(logits, history_), vocab);
}

void sequence::build_pieces(const tokenizer& vocab) {
  if (!pieces_.empty()) return;
  const int32_t nv = sampler_.n_vocab();
  pieces_.resize(static_cast<size_t>(nv));
  string_safe_.assign(static_cast<size_t>(nv), 0);
  for (int32_t t = 0; t < nv && t < vocab.n_vocab(); ++t) {
    if (vocab.is_control(t)) continue;  // control tokens (and empty pieces) add no text
    std::string& p = pieces_[static_cast<size_t>(t)];
    p = vocab.token_to_piece(t);
    string_safe_[static_cast<size_t>(t)] = !p.empty() && std::none_of(p.begin(), p.end(), [](char c) {
      return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
    });
  }
}

bool sequence::choice_made() const {
  if (params_.choices.empty()) return false;
  bool equal = false;
  for (const auto& c : params_.choices) {
    if (c.size() < answer_.size() || c.compare(0, answer_.size(), answer_) != 0) continue;
    if (c.size() > answer_.size()) return false;  // a longer choice may still follow
    equal = true;
  }
  return equal;
}

void sequence::constrain_choice(const tokenizer& vocab) {
  build_pieces(vocab);
  const int32_t nv = sampler_.n_vocab();
  // The bytes that can come next: those the choices continuing the answer have there.
  bool next_ok[256] = {};
  bool whole = false;
  for (const auto& c : params_.choices) {
    if (c.size() < answer_.size() || c.compare(0, answer_.size(), answer_) != 0) continue;
    if (c.size() == answer_.size()) whole = true;
    else next_ok[static_cast<unsigned char>(c[answer_.size()])] = true;
  }
  std::vector<int32_t> banned;
  for (int32_t t = 0; t < nv; ++t) {
    const std::string& piece = pieces_[static_cast<size_t>(t)];
    bool ok = false;
    if (vocab.is_eog(t)) {
      ok = whole;
    } else if (!piece.empty() && next_ok[static_cast<unsigned char>(piece[0])]) {
      for (const auto& c : params_.choices)
        if (c.size() >= answer_.size() + piece.size() && c.compare(0, answer_.size(), answer_) == 0 &&
            c.compare(answer_.size(), piece.size(), piece) == 0) {
          ok = true;
          break;
        }
    }
    if (!ok) banned.push_back(t);
  }
  sampler_.set_banned(std::move(banned));
}

void sequence::constrain_json(const tokenizer& vocab) {
  build_pieces(vocab);
  const int32_t nv = sampler_.n_vocab();
  // Which first bytes can come next: a token whose first byte cannot is out without feeding it.
  bool first_ok[256];
  for (int b = 0; b < 256; ++b) {
    json_recognizer r = *json_;
    first_ok[b] = r.feed(static_cast<char>(b));
  }
  const bool whole = json_->complete(), in_text = json_->in_string_text();
  std::vector<int32_t> banned;
  for (int32_t t = 0; t < nv; ++t) {
    const auto i = static_cast<size_t>(t);
    const std::string& piece = pieces_[i];
    bool ok;
    if (vocab.is_eog(t)) ok = whole;
    else if (whole || piece.empty() || !first_ok[static_cast<unsigned char>(piece[0])]) ok = false;
    else if (in_text && string_safe_[i]) ok = true;  // more text of the string: the state stays
    else {
      json_recognizer r = *json_;
      ok = r.feed(piece);
    }
    if (!ok) banned.push_back(t);
  }
  sampler_.set_banned(std::move(banned));
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
  // A constraint allows end-of-generation only where the answer is whole: it ends it even with ignore_eos.
  if ((vocab.is_eog(tok) && (!params_.ignore_eos || constrained())) ||
      std::find(stop_ids.begin(), stop_ids.end(), tok) != stop_ids.end()) {
    finish("stop");
    return out;
  }
  out.token = tok;
  history_.push_back(tok);
  generated_.push_back(tok);
  const std::string piece = vocab.token_to_piece(tok);
  if (json_) (void)json_->feed(piece);  // sampled under constrain_json, or resumed: it continues the object
  if (!params_.choices.empty()) answer_ += piece;
  auto fed = stops_.feed(utf8_.push(piece));
  out.text = std::move(fed.emit);
  if (fed.stopped || (json_ && json_->complete()) || choice_made()) {  // the object closed / a choice is whole
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
  if (constrained()) {  // JSON mode and choices decode plainly: the proposal is not taken, the first row decides
    if (!finished_) outs.push_back(advance(rows.subspan(0, nv), vocab));
    return outs;
  }
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
