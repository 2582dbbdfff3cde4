// kv_codec: one sequence's KV cache as a compact, versioned, checksummed byte stream (K and V
// only), and back into a pool: the one format for copies between two devices' pools, later GPU
// links and the network between nodes. The stream does not depend on block size or the pool's
// element type, so it moves between pools of different block_tokens and dtype of the same per-token
// shape (layers, KV heads, head_dim).
//
// Layout (little-endian): a 40-byte header
//   0 "FWKV" | 4 u16 version (1) | 6 u8 wire | 7 u8 0 | 8 u32 n_layer | 12 u32 n_head_kv |
//   16 u32 head_dim | 20 u32 n_tokens | 24 u64 payload bytes | 32 u32 payload CRC32C |
//   36 u32 CRC32C of bytes 0..35
// then for each layer, each KV head: the K rows of every token, then the V rows. A row is
// head_dim values as f32, f16 (IEEE half), or int8 (a f32 scale = max|x| / 127, then head_dim
// int8 values rounded to nearest: a quarter of f32 plus the scales, error <= scale / 2).
//
// Decoding checks everything (size, magic, version, wire, both checksums, shape) before it
// writes anything; on any error the destination pool and handle are unchanged and the message
// starts with "kv stream: ". Thread-safety: functions; the caller owns the handles it passes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/base/expected.hpp"
#include "runtime/kv/kv_block_pool.hpp"

namespace fw {

/// Element format of the rows on the wire.
enum class kv_wire : uint8_t { f32 = 0, f16 = 1, int8 = 2 };
const char* to_string(kv_wire w);

inline constexpr uint16_t kv_stream_version = 1;
inline constexpr size_t kv_stream_header_bytes = 40;

struct kv_stream_info {
  uint16_t version = 0;
  kv_wire wire = kv_wire::f32;
  uint32_t n_layer = 0, n_head_kv = 0, head_dim = 0, n_tokens = 0;
  uint64_t payload_bytes = 0;
};

/// The stream of h's first min(count, h.n_tokens) tokens (h is read only).
expected<std::vector<std::byte>> kv_encode(const kv_block_pool& pool, const kv_handle& h, kv_wire wire,
                                           uint32_t count = UINT32_MAX);

/// Checks the header (size, magic, version, wire, header checksum, payload size) without a pool.
expected<kv_stream_info> kv_peek(std::span<const std::byte> bytes);

/// Writes the stream's tokens into `to` (default constructed: allocated in dst; else grown) and
/// sets its length. Errors: invalid_argument (corrupt, truncated, other version or shape),
/// out_of_memory (too few free blocks); `to` and dst unchanged on every error.
expected<void> kv_decode(std::span<const std::byte> bytes, kv_block_pool& dst, kv_handle& to);

/// Bytes n tokens of this shape take as an f32 cache (the base of a compression ratio).
uint64_t kv_f32_bytes(const kv_layout& layout, uint32_t n_tokens);

/// CRC32C (Castagnoli) of bytes, continuing from crc (0 to start).
uint32_t crc32c(std::span<const std::byte> bytes, uint32_t crc = 0);

}  // namespace fw
