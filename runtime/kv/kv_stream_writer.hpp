// kv_stream_writer: the kv_codec stream of one sequence, produced piece by piece, so that a
// sender can put the first bytes on the network while it encodes the rest and never holds the
// whole stream (a node's KV transfer: actors/node_service_actor). The bytes are those of
// kv_encode except the header's payload checksum, which is not known until the end: it is 0, and
// payload_crc() gives it once the last byte is read (the receiver passes it to
// kv_stream_reader::finish).
// Thread-safety: one thread at a time; the handle's blocks must not change until done().
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/kv/kv_codec.hpp"
#include "runtime/kv/kv_codec_detail.hpp"

namespace fw {

class kv_stream_writer {
 public:
  /// The stream of h's first min(count, h.n_tokens) tokens (h is read, not kept).
  static expected<kv_stream_writer> open(const kv_block_pool& pool, const kv_handle& h, kv_wire wire,
                                         uint32_t count = UINT32_MAX);

  uint64_t size() const { return size_; }  ///< header + payload bytes
  uint64_t written() const { return written_; }
  bool done() const { return written_ == size_; }
  uint32_t tokens() const { return info_.n_tokens; }
  /// Writes the next min(max_bytes, size() - written()) bytes of the stream at out; returns them.
  size_t read(std::byte* out, size_t max_bytes);
  /// CRC32C of the payload; valid once done().
  uint32_t payload_crc() const { return crc_; }

 private:
  kv_stream_writer() = default;
  size_t next_unit_bytes() const;
  /// Writes the next unit (the header, then one block's K or V rows of one (layer, head)) at out.
  void emit_unit(std::byte* out);

  const kv_block_pool* pool_ = nullptr;
  std::vector<uint32_t> blocks_;
  kv_stream_info info_;
  size_t rb_ = 0;
  uint64_t size_ = 0, written_ = 0;
  uint32_t crc_ = 0;
  // The unit being read out: the header, then one block's K or V rows of one (layer, head).
  std::vector<std::byte> unit_;
  size_t unit_at_ = 0;
  bool header_done_ = false;
  kv_detail::unit_cursor at_;
};

}  // namespace fw
