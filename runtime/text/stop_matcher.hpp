// stop_matcher: finds stop strings in text decoded incrementally (token by token) and decides what
// may be streamed. Text that could still grow into a stop string is held back, so a partial stop
// string is never sent; text from a completed stop string onwards is never sent.
// Matching is on bytes: a stop string is found no matter how the text was split into chunks, and
// the result does not depend on the chunking. (Splitting incomplete UTF-8 sequences is the
// detokenizer's concern.)
// Ownership: owns copies of the stop strings and the held-back text.
// Thread-safety: one matcher per sequence, used by one thread at a time.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fw {

class stop_matcher {
 public:
  /// What one feed() decided.
  struct result {
    std::string emit;        ///< text safe to stream now (before the stop string when stopped)
    bool stopped = false;    ///< a stop string completed; generation should end
    size_t stop_index = 0;   ///< which stop string (index into the constructor's list) if stopped
  };

  /// Empty stop strings are ignored; with none, feed() passes text straight through.
  explicit stop_matcher(std::vector<std::string> stops);

  /// Appends newly decoded text. Once stopped, further text is dropped (emit stays empty).
  /// When several stop strings complete in the same text, the one that ends first wins (ties: the
  /// longer one, which started earlier) - the same answer as feeding one byte at a time.
  [[nodiscard]] result feed(std::string_view text);

  /// At the end of generation without a stop (end of sequence, max tokens): the held-back text,
  /// which can no longer become a stop string. Empty once stopped.
  [[nodiscard]] std::string flush();

  /// Forgets held text and the stopped state, keeping the stop strings.
  void reset();

  [[nodiscard]] bool stopped() const { return stopped_; }
  /// Bytes currently held back (a possible prefix of a stop string).
  [[nodiscard]] size_t held_bytes() const { return held_.size(); }
  [[nodiscard]] const std::vector<std::string>& stops() const { return stops_; }

 private:
  // Length of the longest suffix of held_ that is a proper prefix of some stop string.
  size_t partial_suffix() const;

  std::vector<std::string> stops_;
  size_t max_len_ = 0;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace fw
