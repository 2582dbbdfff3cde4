#include "runtime/supervise/restart_policy.hpp"

#include <algorithm>
#include <cmath>

namespace fw {

restart_decision restart_policy::crashed(double now_s) {
  ++crashes_;
  while (!recent_.empty() && now_s - recent_.front() > limits_.window_s) recent_.pop_front();
  recent_.push_back(now_s);
  restart_decision d;
  d.recent = static_cast<uint32_t>(recent_.size());
  if (d.recent > limits_.max_restarts) {
    ++escalations_;
    d.escalate = true;
    d.delay_s = limits_.down_s;
    recent_.clear();  // a device back from down starts a fresh window
    return d;
  }
  const double doublings = std::min<double>(d.recent - 1, 62);
  d.delay_s = std::min(limits_.backoff_max_s, limits_.backoff_s * std::exp2(doublings));
  return d;
}

}  // namespace fw
