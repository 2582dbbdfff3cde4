#include "runtime/sched/peer_choice.hpp"

#include <algorithm>
#include <cmath>

namespace fw {

peer_pick choose_peer(std::span<const peer_view> peers, uint32_t tokens, uint32_t cached, uint32_t min_remote,
                      double deadline_s) {
  if (tokens == 0 || tokens < min_remote) return {-1, "shorter than [node] min_remote_tokens"};
  if (cached > tokens) return {-1, "most of it is cached here"};
  auto finish_s = [&](const peer_view& p) {
    return p.tokens_per_s > 0 ? static_cast<double>(p.queued_tokens + cached + tokens) / p.tokens_per_s : 0.0;
  };
  int best = -1;
  for (int i = 0; i < static_cast<int>(peers.size()); ++i) {
    const auto& p = peers[i];
    if (!p.connected) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    const auto& b = peers[best];
    const double fp = finish_s(p), fb = finish_s(b);
    if (fp < fb || (fp == fb && (p.in_flight < b.in_flight || (p.in_flight == b.in_flight && p.served < b.served))))
      best = i;
  }
  if (best < 0) return {-1, peers.empty() ? "no prefill node configured" : "no prefill node connected"};
  if (finish_s(peers[best]) > deadline_s) return {-1, "the prefill nodes are too far behind for the deadline"};
  return {best, ""};
}

double reconnect_delay_s(uint32_t failures, double base_s, double max_s) {
  const double d = base_s * std::pow(2.0, static_cast<double>(std::min<uint32_t>(failures, 40)));
  return std::min(d, max_s);
}

}  // namespace fw
