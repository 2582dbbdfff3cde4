// node_board: a decode node's view of its prefill nodes, written by the node link actor on
// every change and read by the engine (stats, metrics, :devices) from any thread.
// Thread-safety: every member function locks.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace fw::actors {

struct peer_report {
  std::string address;       ///< "host:port"
  std::string state;         ///< "connecting" (first attempt), "connected", "down" or "refused" (kept while retried)
  std::string reason;        ///< why it is down or refused (the last error)
  std::string name;          ///< its identity's name once it said hello
  uint64_t prefills = 0;     ///< prompts it prefilled for this node
  uint64_t bytes = 0;        ///< KV stream bytes received from it
  uint64_t failovers = 0;    ///< its prefills redone here (lost, late, refused stream)
  uint64_t connects = 0;     ///< handshakes that passed
  uint64_t forged = 0;       ///< KV chunks and replies dropped: not from it, or their seal is wrong
  uint32_t in_flight = 0;
  double prefill_s = 0;      ///< its forward passes, summed
  double transfer_s = 0;     ///< prefill-to-decode latency summed: request round trip minus the forward passes, plus the decode into the pool
  // transfer_s split: kv_encode and the sends on the prefill node, kv_decode here; the rest
  // (transfer_s - encode_s - decode_s) is the network and message handling.
  double encode_s = 0;
  double decode_s = 0;
};

class node_board {
 public:
  void publish(std::vector<peer_report> peers, uint64_t local_prefills) {
    std::lock_guard lock(mu_);
    peers_ = std::move(peers);
    local_ = local_prefills;
  }
  std::vector<peer_report> peers() const {
    std::lock_guard lock(mu_);
    return peers_;
  }
  /// Prompts the decode node prefilled itself (no peer, short, cached prefix, or failed over).
  uint64_t local_prefills() const {
    std::lock_guard lock(mu_);
    return local_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<peer_report> peers_;
  uint64_t local_ = 0;
};

}  // namespace fw::actors
