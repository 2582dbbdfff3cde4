// grammar_recognizer: a grammar (grammar.hpp) recognised byte by byte, for constrained decoding.
// The state is the set of stacks of grammar positions the text so far can be in (a stack per way
// the grammar can still go; the top of each is a byte set the next byte may match), kept sorted
// and without repeats, so equal states have equal representations. A byte advances every stack
// and keeps those that match; a stack that runs out means the text so far is a whole sentence
// (can_end). Rule references are expanded as stacks advance; a reference in the last place of an
// alternative replaces its frame (right recursion does not grow the stack).
// Decoding asks, every step, which of ~50k tokens can come next: states are interned in a cache
// and their transitions on each byte remembered (a DFA built lazily over the states the text
// actually reaches), so a token is checked by a table walk over its bytes. The cache starts
// again when a call finds it holding cache_states states or more.
// Limits: at most max_stacks ways at once (max_stacks * 64 positions in all) and max_depth frames
// a stack; a byte that would need more is refused (the text stays what it was), as is an
// expansion that runs away or nests alternatives deeper than max_expansion_depth.
// Thread-safety: copies share their cache: a recognizer and its copies are used by one thread
// at a time.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/sample/grammar.hpp"

namespace fw {

class grammar_recognizer {
 public:
  static constexpr size_t max_stacks = 1024;
  static constexpr size_t max_depth = 512;
  static constexpr size_t cache_states = 2048;
  static constexpr int max_expansion_depth = 256;

  /// At the start of `g`'s root rule.
  explicit grammar_recognizer(std::shared_ptr<const grammar> g);

  /// Whether byte c can come next; on false the state is unchanged.
  [[nodiscard]] bool feed(char c);
  /// Every byte of `bytes` in turn; on false the state is unchanged (all or nothing).
  [[nodiscard]] bool feed(std::string_view bytes);
  /// Whether feed(bytes) would succeed (the state is not changed).
  [[nodiscard]] bool accepts(std::string_view bytes) const;
  /// The start state could not be expanded within the limits (a grammar to refuse).
  [[nodiscard]] bool start_failed() const { return start_failed_; }
  /// The text so far is a whole sentence of the grammar.
  [[nodiscard]] bool can_end() const { return can_end_; }
  /// It is whole and no byte can follow.
  [[nodiscard]] bool done() const { return can_end_ && stacks_.empty(); }
  /// The bytes that can come next (`ok`) and those after which the state is the same as now
  /// (`same`: e.g. a string's plain characters), for filtering a vocabulary a byte at a time.
  void next_bytes(byte_set* ok, byte_set* same) const;

  bool operator==(const grammar_recognizer& o) const { return can_end_ == o.can_end_ && stacks_ == o.stacks_; }

 private:
  // Stacks, flat: a length, then that many positions, bottom first; sorted, no repeats.
  using flat = std::vector<uint32_t>;
  static constexpr uint32_t dead = UINT32_MAX, unknown = UINT32_MAX - 1;
  struct cached_state {
    flat stacks;
    bool can_end = false;
    std::array<uint32_t, 256> next;  // the state after each byte: an id, dead or unknown
  };
  struct flat_hash {
    size_t operator()(const flat& f) const;
  };
  struct cache {
    std::vector<cached_state> states;
    std::unordered_map<flat, uint32_t, flat_hash> ids;  // stacks + can_end -> id
    uint64_t generation = 0;  // bumped when the cache starts again
  };

  /// The stacks of `from` advanced on byte c, into `to` (sorted); whether one ran out.
  bool step(const flat& from, uint8_t c, flat& to, bool* ok) const;
  /// Expands `stack` until its top is a byte set (appended to `to`) or it runs out (true).
  /// `depth`: alternatives expanded within alternatives (bounded by max_expansion_depth).
  bool expand(std::vector<uint32_t>& stack, flat& to, int* budget, int depth) const;
  static void canonical(flat& stacks);
  /// This state's id in the cache (interned now if the cache started again).
  uint32_t id() const;
  uint32_t intern(const flat& stacks, bool can_end) const;
  /// The state's id after `bytes` from this one, or dead.
  uint32_t walk(std::string_view bytes) const;
  /// The id after byte c from state `from`, or dead.
  uint32_t transition(uint32_t from, uint8_t c) const;

  std::shared_ptr<const grammar> g_;
  std::shared_ptr<cache> cache_;
  flat stacks_;
  bool can_end_ = false;
  // This state's id in cache_ while the cache's generation is gen_ (set together with the state).
  mutable uint32_t id_ = dead;
  mutable uint64_t gen_ = 0;
  bool start_failed_ = false;
};

}  // namespace fw
