// kv_codec_detail: the pieces of the kv_codec stream format that kv_codec, kv_stream_writer and
// kv_stream_reader share (row sizes, the header, one block's K or V rows to and from the wire).
// Internal to runtime/kv; the format itself is described in kv_codec.hpp.
// Thread-safety: functions; the caller owns the blocks it reads or writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "runtime/kv/kv_codec.hpp"

namespace fw::kv_detail {

/// Where a stream is: its units go block by block through (layer, head)'s K rows, then its V rows,
/// then the next head, then the next layer.
struct unit_cursor {
  uint32_t layer = 0, head = 0, t0 = 0;  ///< t0: the unit's first token
  bool v = false;
  /// Rows in the unit at the cursor.
  [[nodiscard]] uint32_t rows(uint32_t block_tokens, uint32_t n_tokens) const {
    return block_tokens < n_tokens - t0 ? block_tokens : n_tokens - t0;
  }
  void advance(uint32_t block_tokens, uint32_t n_tokens, uint32_t n_head_kv) {
    t0 += block_tokens;
    if (t0 < n_tokens) return;
    t0 = 0;
    if (!v) {
      v = true;
      return;
    }
    v = false;
    if (++head == n_head_kv) {
      head = 0;
      ++layer;
    }
  }
};

/// An invalid_argument error whose message starts with "kv stream: ".
error bad(std::string msg);
/// Bytes of one wire row of head_dim hd.
size_t row_bytes(kv_wire w, uint32_t hd);
/// Payload bytes of a shape, or 0 when it is too large to be a stream (hostile headers).
uint64_t payload_for(kv_wire w, uint32_t layers, uint32_t heads, uint32_t hd, uint32_t n);
/// The first cnt tokens of block b's (layer, head) K tile (v: V tile) as wire rows at out.
void tile_rows(const kv_block_pool& pool, uint32_t b, uint32_t layer, uint32_t head, bool v, uint32_t cnt, kv_wire w,
               std::byte* out);
/// The inverse: cnt wire rows into the first cnt tokens of that tile.
void store_rows(kv_block_pool& pool, uint32_t b, uint32_t layer, uint32_t head, bool v, uint32_t cnt, kv_wire w,
                const std::byte* in);
/// Every int8 row's scale (its first 4 bytes) is finite, non-negative and finite times 127.
bool int8_scales_ok(const std::byte* rows, size_t n_rows, size_t rb);
/// The 40-byte header of `in` with this payload checksum (and its own checksum).
void write_header(std::byte* header, const kv_stream_info& in, uint32_t payload_crc);
uint32_t header_payload_crc(const std::byte* header);
/// Checks the first 40 bytes (magic, version, wire, header checksum, payload size vs shape).
expected<kv_stream_info> read_header(std::span<const std::byte> bytes);
/// The stream's per-token shape is the pool's.
expected<void> check_shape(const kv_stream_info& info, const kv_layout& l);

}  // namespace fw::kv_detail
