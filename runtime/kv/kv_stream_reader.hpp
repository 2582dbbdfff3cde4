// kv_stream_reader: a kv_codec stream written into a pool as its bytes arrive, in pieces of any
// size, so that a receiver decodes while the rest is still on the network and never assembles the
// whole stream (a decode node's KV transfer: actors/node_link_actor). The header is checked when
// its 40 bytes are in (shape against the pool, then the handle is grown to the stream's tokens);
// each block's rows are checked (int8 scales) and stored as soon as they are complete; finish()
// checks the length and the payload checksum and only then sets the handle's length. Until
// finish() succeeds the handle's length is unchanged, so its rows count for nothing: a stream
// that turns out damaged leaves blocks that the next writer overwrites.
// Thread-safety: one thread at a time; the pool's reserve locks, the rows written are the
// handle's own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "runtime/kv/kv_codec.hpp"
#include "runtime/kv/kv_codec_detail.hpp"

namespace fw {

class kv_stream_reader {
 public:
  /// Writes into `to` (default constructed: allocated in dst; else grown to the stream's tokens).
  /// `payload_checked`: the caller has verified the whole payload (its checksum and int8 scales,
  /// as kv_decode does before it writes anything), so neither is computed again.
  kv_stream_reader(kv_block_pool& dst, kv_handle to, bool payload_checked = false)
      : dst_(&dst), to_(std::move(to)), checked_(payload_checked) {}

  /// The next bytes of the stream. The first error is kept: later calls return it.
  expected<void> feed(std::span<const std::byte> bytes);
  /// All bytes are in: checks the length and the payload checksum (`payload_crc`: the header's
  /// when empty, which is 0 in a streamed one) and sets the handle's length.
  expected<void> finish(std::optional<uint32_t> payload_crc = std::nullopt);
  uint64_t received() const { return received_; }
  /// The handle (with every block it was grown by, whether or not finish succeeded).
  kv_handle take() { return std::move(to_); }

 private:
  expected<void> consume(const std::byte* unit);
  size_t unit_bytes() const;

  kv_block_pool* dst_;
  kv_handle to_;
  std::optional<error> failed_;
  kv_stream_info info_;
  uint32_t header_crc_ = 0;
  bool header_done_ = false;
  bool checked_ = false;
  size_t rb_ = 0;
  uint64_t received_ = 0, payload_left_ = 0;
  uint32_t crc_ = 0;
  std::vector<std::byte> pending_;  // a unit that arrived in pieces
  kv_detail::unit_cursor at_;
};

}  // namespace fw
