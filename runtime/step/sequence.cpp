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
  if (!params.json_schema.empty() || !params.regex.empty() || !params.grammar.empty()) {
    // validate() compiled it at the boundary; one that fails here would be a bug there.
    auto g = !params.regex.empty() ? regex_grammar(params.regex)
             : !params.grammar.empty() ? gbnf_grammar(params.grammar)
                                       : json_schema_grammar(params.json_schema);
    if (g) schema_.emplace(*g);
    else if (!params.json_schema.empty()) json_.emplace();  // a schema's answer is at least a JSON object
  }
}

token_outcome sequence::advance(std::span<const float> logits, const tokenizer& vocab) {
  if (finished_) {
    token_outcome out;
    out.finished = true;
    return out;
  }
  if (constrained() && params_.temperature <= 0) {
    // Greedy under a constraint: the most likely token is the answer whenever the constraint
    // admits it (it is then also the most likely admitted one, lowest id on ties), so the
    // vocabulary is walked only when it does not. Logprobs are the raw logits' either way.
    build_pieces(vocab);
    if (sampler_.has_banned()) {
      banned_buf_.clear();
      sampler_.swap_banned(banned_buf_);  // no bans; the old list's buffer is kept for reuse
    }
    const int32_t best = sampler_.sample(logits, history_);
    if (admits(best)) return push(best, vocab);
  }
  if (json_) constrain_json(vocab);
  else if (schema_) constrain_grammar(vocab);
  else if (!params_.choices.empty()) constrain_choice(vocab);
  else ban_endings(vocab);
  return push(sampler_.sample(logits, history_), vocab);
}

bool sequence::admits(int32_t t) const {
  const token_pieces& tp = *pieces_;
  if (t < 0 || t >= tp.size()) return false;
  // The lists begin_bans starts from: endings unless the answer may end, text-less tokens.
  if (tp.eog(t)) return json_ ? json_->complete() : schema_ ? schema_->can_end() : choice_whole();
  const std::string& piece = tp.piece(t);
  if (piece.empty()) return false;
  // The rest as constrain_json / constrain_grammar / constrain_choice decide for its bucket.
  if (json_) {
    if (json_->complete()) return false;
    if (json_->in_string_text() && tp.string_safe(t)) return true;
    json_recognizer r = *json_;
    return r.feed(piece);
  }
  if (schema_) {
    if (schema_->done()) return false;
    byte_set next, same;
    schema_->next_bytes(&next, &same);
    return next.has(static_cast<uint8_t>(piece[0])) && (tp.bytes_within(t, same) || schema_->accepts(piece));
  }
  return choice_continues(piece);
}

bool sequence::choice_whole() const {
  return std::any_of(params_.choices.begin(), params_.choices.end(), [&](const std::string& c) { return c == answer_; });
}

bool sequence::choice_continues(const std::string& piece) const {
  return std::any_of(params_.choices.begin(), params_.choices.end(), [&](const std::string& c) {
    return c.size() >= answer_.size() + piece.size() && c.compare(0, answer_.size(), answer_) == 0 &&
           c.compare(answer_.size(), piece.size(), piece) == 0;
  });
}

void sequence::build_pieces(const tokenizer& vocab) {
  if (!pieces_) pieces_ = std::make_shared<const token_pieces>(vocab, sampler_.n_vocab());
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
  const token_pieces& tp = *pieces_;
  // The bytes that can come next: those the choices continuing the answer have there.
  byte_set next;
  bool whole = false;
  for (const auto& c : params_.choices) {
    if (c.size() < answer_.size() || c.compare(0, answer_.size(), answer_) != 0) continue;
    if (c.size() == answer_.size()) whole = true;
    else next.add(static_cast<uint8_t>(c[answer_.size()]));
  }
  std::vector<int32_t>& banned = begin_bans(whole);
  for (unsigned b = 0; b < 256; ++b) {
    const auto& bucket = tp.starting_with(static_cast<uint8_t>(b));
    if (!next.has(static_cast<uint8_t>(b))) {
      banned.insert(banned.end(), bucket.begin(), bucket.end());
      continue;
    }
    for (int32_t t : bucket)
      if (!choice_continues(tp.piece(t))) banned.push_back(t);
  }
  end_bans();
}

void sequence::constrain_json(const tokenizer& vocab) {
  build_pieces(vocab);
  const token_pieces& tp = *pieces_;
  // Which first bytes can come next: a token whose first byte cannot is out without feeding it.
  byte_set first_ok;
  for (int b = 0; b < 256; ++b) {
    json_recognizer r = *json_;
    if (r.feed(static_cast<char>(b))) first_ok.add(static_cast<uint8_t>(b));
  }
  const bool whole = json_->complete(), in_text = json_->in_string_text();
  std::vector<int32_t>& banned = begin_bans(whole);
  for (unsigned b = 0; b < 256; ++b) {
    const auto& bucket = tp.starting_with(static_cast<uint8_t>(b));
    if (whole || !first_ok.has(static_cast<uint8_t>(b))) {
      banned.insert(banned.end(), bucket.begin(), bucket.end());
      continue;
    }
    for (int32_t t : bucket) {
      if (in_text && tp.string_safe(t)) continue;  // more text of the string: the state stays
      json_recognizer r = *json_;
      if (!r.feed(tp.piece(t))) banned.push_back(t);
    }
  }
  end_bans();
}

void sequence::constrain_grammar(const tokenizer& vocab) {
  build_pieces(vocab);
  const token_pieces& tp = *pieces_;
  byte_set next, same;  // the bytes that can come next, and those that leave the state as it is
  schema_->next_bytes(&next, &same);
  std::vector<int32_t>& banned = begin_bans(schema_->can_end());
  const bool done = schema_->done();
  for (unsigned b = 0; b < 256; ++b) {
    const auto& bucket = tp.starting_with(static_cast<uint8_t>(b));
    if (done || !next.has(static_cast<uint8_t>(b))) {
      banned.insert(banned.end(), bucket.begin(), bucket.end());
      continue;
    }
    for (int32_t t : bucket)
      if (!tp.bytes_within(t, same) && !schema_->accepts(tp.piece(t))) banned.push_back(t);
  }
  end_bans();
}

std::vector<int32_t>& sequence::begin_bans(bool may_end) {
  banned_buf_.clear();
  if (!may_end) banned_buf_.insert(banned_buf_.end(), pieces_->endings().begin(), pieces_->endings().end());
  banned_buf_.insert(banned_buf_.end(), pieces_->textless().begin(), pieces_->textless().end());
  return banned_buf_;
}

void sequence::end_bans() {
  // No token continues the text (a grammar's limits): allow ending rather than ban everything.
  if (banned_buf_.size() >= static_cast<size_t>(pieces_->size())) {
    std::erase_if(banned_buf_, [&](int32_t t) { return pieces_->eog(t); });
  }
  sampler_.swap_banned(banned_buf_);
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
  if (schema_) (void)schema_->feed(piece);
  if (!params_.choices.empty()) answer_ += piece;
  auto fed = stops_.feed(utf8_.push(piece));
  out.text = std::move(fed.emit);
  // The object closed / the schema's text can take nothing more / a choice is whole.
  if (fed.stopped || (json_ && json_->complete()) || (schema_ && schema_->done()) || choice_made()) {
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
