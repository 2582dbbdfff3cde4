#include "actors/node_seal.hpp"

#include <cstring>

#include "runtime/net/link_auth.hpp"

namespace fw::actors {

namespace {
template <class T>
uint64_t bits(T v) {
  static_assert(sizeof(T) <= sizeof(uint64_t));
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}
}  // namespace

std::string seal_of(std::string_view key, const remote_prefill_job& job) {
  if (key.empty()) return {};
  return hmac_sha256(key)
      .put("job")
      .put_u64(job.id)
      .put_bytes(job.tokens.data(), job.tokens.size() * sizeof(int32_t))
      .put_u64(job.wire)
      .put_u64(job.chunk_bytes)
      .finish();
}

std::string seal_of(std::string_view key, const kv_chunk& chunk) {
  if (key.empty()) return {};
  return hmac_sha256(key).put("chunk").put_u64(chunk.id).put_u64(chunk.seq).put(chunk.bytes).finish();
}

std::string seal_of(std::string_view key, const remote_prefill_done& d) {
  if (key.empty()) return {};
  return hmac_sha256(key)
      .put("done")
      .put_u64(d.id)
      .put_u64(d.chunks)
      .put_u64(d.bytes)
      .put_u64(bits(d.prefill_ms))
      .put_u64(bits(d.encode_ms))
      .put_u64(d.payload_crc)
      .put_u64(bits(d.attention_entropy))
      .put(d.error)
      .finish();
}

}  // namespace fw::actors
