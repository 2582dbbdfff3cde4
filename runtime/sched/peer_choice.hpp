// peer_choice: where a decode node's prompt is prefilled, among its prefill nodes ([node] peers)
// or locally, and how long to wait before the next connection attempt to a lost peer. Pure:
// peer states in, a choice out (the node link actor applies it). Thread-safety: functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace fw {

struct peer_view {
  bool connected = false;  ///< the handshake passed and the last heartbeat was answered
  uint32_t in_flight = 0;  ///< its prefills not yet back
  uint64_t served = 0;     ///< its prefills so far (ties go to the less used peer)
  uint64_t queued_tokens = 0;  ///< prompt tokens of its prefills in flight
  double tokens_per_s = 0;     ///< its measured prefill rate; 0: not measured yet
};

struct peer_pick {
  int peer = -1;       ///< index into the views; -1: prefill locally
  std::string reason;  ///< why locally ("" when remote)
};

/// A prompt of `tokens` new tokens after `cached` ones already in the local KV (a prefix-cache
/// hit, which a peer cannot see: it is given the prompt whole and computes the cached part again)
/// goes to the connected peer that is expected to finish it first (its queued tokens
/// and this prompt at its measured rate; then the fewest in flight, then the least used); locally
/// when its new tokens are fewer than min_remote, when most of it is cached here (more cached
/// tokens than new ones: a conversation's next turn, cheaper to finish here than to stream back
/// whole), when no peer is up, or when even that peer would finish it past deadline_s (it would
/// fail over anyway).
peer_pick choose_peer(std::span<const peer_view> peers, uint32_t tokens, uint32_t cached, uint32_t min_remote,
                      double deadline_s = 1e300);

/// The wait before attempt `failures` + 1 to reach a peer: base_s doubled per failure, capped.
double reconnect_delay_s(uint32_t failures, double base_s, double max_s);

}  // namespace fw
