// ngram_drafter: draft-free prompt lookup. Finds the most recent earlier occurrence of the last
// n tokens of the history (n from n_max down to 1) and proposes the k tokens that followed it.
// Strong when the answer quotes the prompt (extraction, code edits, RAG); stateless and cheap.
// Thread-safety: stateless apart from configuration.
#pragma once

#include "runtime/drafter.hpp"

namespace fw {

/// The pure lookup: up to k tokens continuing the latest earlier match of history's last n
/// tokens (trying n = n_max .. 1). Empty when nothing matches.
std::vector<int32_t> ngram_lookup(std::span<const int32_t> history, int n_max, int k);

class ngram_drafter final : public drafter {
 public:
  explicit ngram_drafter(int n_max = 3) : n_max_(n_max) {}

  std::string name() const override { return "ngram"; }
  expected<void> begin(uint64_t, std::span<const int32_t>, const sampling_params&) override { return {}; }
  expected<draft_proposal> propose(uint64_t, std::span<const int32_t> history, int k) override {
    return draft_proposal{ngram_lookup(history, n_max_, k), {}};
  }
  void accept(uint64_t, std::span<const int32_t>) override {}
  void end(uint64_t) override {}

 private:
  int n_max_;
};

}  // namespace fw
