#include "runtime/text/stop_matcher.hpp"

#include <algorithm>
#include <utility>

namespace fw {

stop_matcher::stop_matcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const std::string& s : stops_) max_len_ = std::max(max_len_, s.size());
}

stop_matcher::result stop_matcher::feed(std::string_view text) {
  result out;
  if (stopped_) return out;
  held_.append(text);

  // The stop string that completes first. held_ never contains a whole stop string between calls,
  // and every possible start of one is still held, so searching held_ is enough.
  size_t best_start = std::string::npos;
  size_t best_end = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const std::string& s = stops_[i];
    if (s.empty()) continue;
    const size_t pos = held_.find(s);
    if (pos == std::string::npos) continue;
    const size_t end = pos + s.size();
    if (end < best_end || (end == best_end && pos < best_start)) {
      best_start = pos;
      best_end = end;
      out.stop_index = i;
    }
  }
  if (best_end != std::string::npos) {
    out.emit = held_.substr(0, best_start);
    out.stopped = true;
    stopped_ = true;
    held_.clear();
    return out;
  }

  const size_t keep = partial_suffix();
  out.emit = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string stop_matcher::flush() {
  return std::exchange(held_, std::string());
}

void stop_matcher::reset() {
  held_.clear();
  stopped_ = false;
}

size_t stop_matcher::partial_suffix() const {
  if (max_len_ == 0) return 0;
  const std::string_view held(held_);
  for (size_t k = std::min(held.size(), max_len_ - 1); k > 0; --k) {
    const std::string_view suffix = held.substr(held.size() - k);
    for (const std::string& s : stops_)
      if (s.size() > k && std::string_view(s).starts_with(suffix)) return k;
  }
  return 0;
}

}  // namespace fw
