// libFuzzer target: the KV stream (a node's KV transfer) on arbitrary bytes: kv_peek, kv_decode
// into a small pool (f16, or q8 when the first byte's top bit is set), and the streaming reader
// fed the same bytes in pieces whose sizes the input picks. Whatever the bytes, the pool's block book must balance afterwards: every block a failed
// read took is back once its handle is released.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <memory>
#include <span>

#include "runtime/kv/kv_block_pool.hpp"
#include "runtime/kv/kv_codec.hpp"
#include "runtime/kv/kv_stream_reader.hpp"

namespace {

std::unique_ptr<fw::kv_block_pool> make_pool(uint32_t id, fw::kv_dtype dt) {
  // The shape of the seed streams (tests/fuzz/corpus/kv_stream): 2 layers, 2 KV heads of 8.
  fw::kv_layout l;
  l.n_layer = 2, l.n_head_kv = 2, l.head_dim = 8, l.block_tokens = 16, l.dtype = dt;
  auto r = fw::kv_block_pool::create(id, l, 8);
  if (!r) __builtin_trap();
  return std::move(*r);
}

/// An f16 pool, or a q8 one (kv_cache.type = "q8_0": rows re-quantized as they are stored).
fw::kv_block_pool& pool(bool q8) {
  static const std::unique_ptr<fw::kv_block_pool> f16 = make_pool(1, fw::kv_dtype::f16);
  static const std::unique_ptr<fw::kv_block_pool> i8 = make_pool(2, fw::kv_dtype::q8);
  return q8 ? *i8 : *f16;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t piece = 1 + (data[0] & 0x7f) % 97;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  auto& p = pool((data[0] & 0x80) != 0);
  const uint32_t free_before = p.free_blocks();
  (void)fw::kv_peek(bytes);
  {
    fw::kv_handle h;
    (void)fw::kv_decode(bytes, p, h);
    (void)p.release(h);
  }
  {
    fw::kv_stream_reader reader(p, fw::kv_handle{});
    bool ok = true;
    for (size_t off = 0; off < bytes.size() && ok; off += piece)
      ok = reader.feed(bytes.subspan(off, std::min(piece, bytes.size() - off))).has_value();
    if (ok) (void)reader.finish();
    fw::kv_handle h = reader.take();
    (void)p.release(h);
  }
  if (p.free_blocks() != free_before) __builtin_trap();  // a leaked block
  return 0;
}
