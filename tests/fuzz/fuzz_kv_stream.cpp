// libFuzzer target: the KV stream (a node's KV transfer) on arbitrary bytes: kv_peek, kv_decode
// into a small pool, and the streaming reader fed the same bytes in pieces whose sizes the input
// picks. Whatever the bytes, the pool's block book must balance afterwards: every block a failed
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

fw::kv_block_pool& pool() {
  // The shape of the seed streams (tests/fuzz/corpus/kv_stream): 2 layers, 2 KV heads of 8.
  static const std::unique_ptr<fw::kv_block_pool> p = [] {
    fw::kv_layout l;
    l.n_layer = 2, l.n_head_kv = 2, l.head_dim = 8, l.block_tokens = 16, l.dtype = fw::kv_dtype::f16;
    auto r = fw::kv_block_pool::create(1, l, 8);
    if (!r) __builtin_trap();
    std::unique_ptr<fw::kv_block_pool> out = std::move(*r);
    return out;
  }();
  return *p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t piece = 1 + data[0] % 97;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  auto& p = pool();
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
