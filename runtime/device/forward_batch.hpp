// forward_batch: one forward pass's rows. A row is one token of one sequence at one position;
// rows of the same sequence appear in increasing, contiguous positions, continuing the tokens
// already in that sequence's KV handle. The same shape serves prefill (many rows, one sequence),
// batched decode (one row per sequence) and speculative verification (k + 1 rows per sequence).
// Thread-safety: plain value; the handles it points at are owned by the caller for the call.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/kv/kv_handle.hpp"

namespace fw {

struct forward_batch {
  std::vector<int32_t> tokens;      ///< per row
  std::vector<int32_t> positions;   ///< per row
  std::vector<uint32_t> seq;        ///< per row: index into `kv`
  std::vector<uint8_t> want_logits; ///< per row: 1 = return this row's logits
  std::vector<kv_handle*> kv;       ///< per sequence
  /// When set, the backend also returns the final hidden state (after the output norm, what the
  /// output head reads) of every logits row, n_embd floats each, in row order
  /// (forward_result::hidden); a feature-level draft predicts the next position's state from it.
  /// Backends that cannot leave it empty.
  bool want_hidden = false;
  /// 0: every layer. Otherwise only the first n_layers run, and the output norm and head read
  /// their result (a layer-skip draft's early exit over the target's own weights and KV). The
  /// KV of the skipped layers is not written for these rows. Backends that cannot stop early
  /// run every layer.
  uint32_t n_layers = 0;
  /// Decode-side work (decode steps, verification, a draft on the target's weights): a backend
  /// with decode priority runs it before waiting prefill chunks.
  bool urgent = false;

  size_t rows() const { return tokens.size(); }
  size_t logit_rows() const;

  /// Appends a row.
  void add(int32_t token, int32_t pos, uint32_t seq_index, bool logits);
  /// Adds a sequence's contiguous span of tokens starting at `start_pos`; logits for the last
  /// row only, or for all rows when all_logits (verification).
  uint32_t add_sequence(kv_handle* handle, const int32_t* tokens, size_t n, int32_t start_pos,
                        bool all_logits);
  void clear();  ///< removes the rows; want_hidden, n_layers and urgent stay
};

class kv_block_pool;

/// What a backend does before computing a batch: checks every row (token in the vocabulary,
/// sequence present) and makes room in each sequence's handle for its rows. Returns each
/// sequence's end position (its length after the forward). Errors: invalid_argument for a bad
/// token, internal for a missing sequence, out_of_memory (nothing reserved past the pool) when
/// the pool cannot hold the new tokens.
expected<std::vector<int32_t>> reserve_batch(const forward_batch& b, kv_block_pool& pool, uint32_t n_vocab);

/// After a forward: sets each sequence's length to its end position where it grew.
expected<void> commit_batch(const forward_batch& b, kv_block_pool& pool, const std::vector<int32_t>& end_pos);

}  // namespace fw
