// batch_decoder: continuous batching over one backend. Active sequences advance together, one
// batched forward per step (one row per sequence); sequences join and leave between steps.
// It owns its sequences and releases their KV blocks when they finish or are removed.
// Thread-safety: owned by one actor (the decode actor) or thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.hpp"
#include "runtime/model.hpp"
#include "runtime/sequence.hpp"

namespace fw {

/// What one step produced for one sequence.
struct step_event {
  uint64_t id = 0;
  int32_t token = -1;  ///< -1: none (EOS)
  std::string text;
  bool finished = false;
  std::string finish_reason;
  uint32_t generated = 0;  ///< tokens generated so far
};

class batch_decoder {
 public:
  batch_decoder(const model& m, backend& b, uint32_t max_rows) : model_(m), backend_(b), max_rows_(max_rows) {}
  ~batch_decoder();
  batch_decoder(const batch_decoder&) = delete;
  batch_decoder& operator=(const batch_decoder&) = delete;

  /// Adds a sequence whose KV holds every history token but the last (next_input()).
  void add(std::unique_ptr<sequence> s);
  /// Removes a sequence (cancel) and frees its KV. false when unknown.
  bool remove(uint64_t id);
  size_t active() const { return seqs_.size(); }
  bool contains(uint64_t id) const { return seqs_.count(id) > 0; }

  /// One batched forward over up to max_rows sequences (longest generations first), sampling
  /// each. Finished sequences are removed and their KV freed. On a backend error nothing
  /// advances and the error is returned.
  expected<std::vector<step_event>> step();

  /// Frees every sequence's KV (shutdown / failure).
  void clear();

 private:
  const model& model_;
  backend& backend_;
  uint32_t max_rows_;
  std::map<uint64_t, std::unique_ptr<sequence>> seqs_;
  forward_batch batch_;
  std::vector<float> logits_;
};

/// Runs a prompt span through the backend in chunks (prefill), appending to `kv` from `start`.
/// `logits` gets the last row's logits.
expected<void> prefill_tokens(backend& b, kv_handle& kv, const int32_t* tokens, size_t n, int32_t start,
                              uint32_t chunk, std::vector<float>& logits);

}  // namespace fw
