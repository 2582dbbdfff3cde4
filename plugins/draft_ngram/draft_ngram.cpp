// draft_ngram: a draft_model plugin for draft-free prompt lookup. To propose k tokens it finds
// the most recent earlier occurrence of the history's last n tokens (n from the "n" param,
// default 3, then n-1 down to 1) and proposes up to k tokens that followed it (never past the end
// of the history). Strong when the answer quotes the prompt (extraction, code edits, RAG).
// Deterministic: no probabilities (FW_DRAFT_PROBS unset; a non-NULL out_probs gets one-hot rows).
// It reads everything from the history it is given, so begin/accept/end keep no state.
// Params: {"n": 1..16}. Includes only the SDK header. Thread-safety: objects are immutable.
#include <flywheel/plugin_sdk.h>

#include <algorithm>

#include "plugin_params.hpp"

#ifndef FW_PLUGIN_VERSION
#define FW_PLUGIN_VERSION "0.0.0"
#endif

namespace {

struct ngram_draft {
  int n_max;
};

int begin(void* self, uint64_t, const int32_t* prompt, size_t n, const fw_sampling_v1*) {
  return self && (prompt || n == 0) ? FW_PLUGIN_OK : FW_PLUGIN_E_INVALID;
}

int propose(void* self, uint64_t, const int32_t* h, size_t len_u, int32_t k, int32_t* out, float* probs,
            int32_t n_vocab) {
  if (!self || (!h && len_u) || k < 0 || (k > 0 && !out) || (probs && n_vocab <= 0)) return FW_PLUGIN_E_INVALID;
  const int64_t len = static_cast<int64_t>(len_u);
  const int n_max = static_cast<ngram_draft*>(self)->n_max;
  int64_t take = 0;
  for (int64_t n = std::min<int64_t>(n_max, len - 1); n >= 1 && take == 0; --n) {
    const int32_t* tail = h + len - n;
    // The latest earlier occurrence whose continuation exists.
    for (int64_t start = len - n - 1; start >= 0; --start) {
      if (!std::equal(tail, tail + n, h + start)) continue;
      const int64_t from = start + n;
      take = std::min<int64_t>(k, len - from);
      if (take <= 0) continue;
      std::copy(h + from, h + from + take, out);
      break;
    }
  }
  if (probs)
    for (int64_t i = 0; i < take; ++i) {
      float* row = probs + i * n_vocab;
      std::fill(row, row + n_vocab, 0.0f);
      if (out[i] >= 0 && out[i] < n_vocab) row[out[i]] = 1.0f;
    }
  return static_cast<int>(take);
}

int accept(void* self, uint64_t, const int32_t* h, size_t n) {
  return self && (h || n == 0) ? FW_PLUGIN_OK : FW_PLUGIN_E_INVALID;
}

void end(void*, uint64_t) {}

int probe(char*, size_t) { return 0; }

void* create(const char* params_json, char* err, size_t err_len) {
  try {
    auto n = fw_plugin::int_param(params_json ? params_json : "{}", "n", 3);
    if (!n || *n < 1 || *n > 16) {
      fw_plugin_message(err, err_len, "param n must be an integer from 1 to 16");
      return nullptr;
    }
    return new ngram_draft{static_cast<int>(*n)};
  } catch (...) {
    fw_plugin_message(err, err_len, "out of memory");
    return nullptr;
  }
}

void destroy(void* self) { delete static_cast<ngram_draft*>(self); }

const fw_draft_model_v1 draft_table = {0, begin, propose, accept, end};
const fw_plugin_v1 plugin = {FW_PLUGIN_ABI_VERSION, FW_PLUGIN_DRAFT_MODEL, "ngram", FW_PLUGIN_VERSION,
                             probe, create, destroy, &draft_table};

}  // namespace

extern "C" FW_PLUGIN_EXPORT const fw_plugin_v1* fw_plugin_entry(void) { return &plugin; }
