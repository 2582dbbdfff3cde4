#include "runtime/text/spm_encoder.hpp"

#include <algorithm>
#include <queue>

#include "runtime/text/unicode_text.hpp"

namespace fw {
namespace {

// A run of the fragment's bytes, linked to its live neighbours; len 0 once merged away.
struct spm_symbol {
  uint32_t start;
  uint32_t len;
  int32_t prev;
  int32_t next;
};

struct spm_bigram {
  float score;
  int32_t left;
  int32_t right;
  uint32_t size;  // bytes of left + right when queued
};

// Highest score first, then leftmost (llama.cpp's llm_bigram_spm::comparator).
struct bigram_order {
  bool operator()(const spm_bigram& a, const spm_bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

int32_t lookup(const token_index& ids, std::string_view text) {
  auto it = ids.find(text);
  return it == ids.end() ? -1 : it->second;
}

}  // namespace

void spm_encode(std::string_view text, const spm_vocab_view& vocab, std::vector<int32_t>& out) {
  std::vector<spm_symbol> syms;
  syms.reserve(text.size());
  for (size_t off = 0; off < text.size();) {
    const size_t len = std::min(text.size() - off, utf8_sequence_length(static_cast<uint8_t>(text[off])));
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({static_cast<uint32_t>(off), static_cast<uint32_t>(len), idx - 1,
                    off + len == text.size() ? -1 : idx + 1});
    off += len;
  }

  std::priority_queue<spm_bigram, std::vector<spm_bigram>, bigram_order> queue;
  auto add_bigram = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const uint32_t size = syms[left].len + syms[right].len;  // the two are adjacent in `text`
    const int32_t id = lookup(vocab.ids, text.substr(syms[left].start, size));
    if (id < 0 || static_cast<size_t>(id) >= vocab.scores.size()) return;
    queue.push({vocab.scores[id], left, right, size});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) add_bigram(i - 1, i);

  while (!queue.empty()) {
    const spm_bigram bg = queue.top();
    queue.pop();
    spm_symbol& l = syms[bg.left];
    spm_symbol& r = syms[bg.right];
    // Symbols only grow, so an unchanged total size means the pair is still current.
    if (l.len == 0 || r.len == 0 || l.len + r.len != bg.size) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = bg.left;
    add_bigram(l.prev, bg.left);
    add_bigram(bg.left, l.next);
  }

  // Every merged symbol is a token by construction; only unmerged characters can be missing, and
  // those fall back to bytes (llama.cpp's resegment never finds them among its merges either).
  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    const std::string_view piece = text.substr(syms[i].start, syms[i].len);
    if (const int32_t id = lookup(vocab.ids, piece); id >= 0) {
      out.push_back(id);
      continue;
    }
    for (unsigned char b : piece) {
      const int32_t id = vocab.byte_tokens[b];
      if (id >= 0) out.push_back(id);
      else if (vocab.unk >= 0) out.push_back(vocab.unk);
    }
  }
}

}  // namespace fw
