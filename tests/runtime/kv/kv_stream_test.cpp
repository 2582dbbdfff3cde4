// kv_stream_writer / kv_stream_reader: the kv_codec stream produced and consumed piece by piece
// (a node's KV transfer). Read out in pieces of any size the writer gives kv_encode's bytes (its
// header carries 0 for the payload checksum, which payload_crc() gives at the end); fed in pieces
// of any size the reader stores what kv_decode stores; a damaged, cut, extended, mis-shaped or
// forged stream is refused (at the header, at the row, or at finish) and the handle's length never
// counts rows that were not verified.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "runtime/kv/kv_stream_reader.hpp"
#include "runtime/kv/kv_stream_writer.hpp"
#include "tests/support/kv_test_pools.hpp"

namespace fw {
namespace {

kv_layout shape(uint32_t block_tokens, kv_dtype dt, uint32_t heads = 2, uint32_t hd = 64) {
  return test::kv_shape(block_tokens, dt, 3, heads, hd);
}
std::unique_ptr<kv_block_pool> make_pool(kv_layout l, uint32_t blocks = 64) { return test::make_kv_pool(l, blocks); }
kv_handle fill(kv_block_pool& pool, uint32_t n, uint32_t seed = 3) { return test::fill_kv(pool, n, seed); }

/// The whole stream read out in pieces of `piece` bytes (the last may be shorter).
std::vector<std::byte> read_all(kv_stream_writer& w, size_t piece) {
  std::vector<std::byte> out;
  std::vector<std::byte> buf(piece);
  while (!w.done()) {
    const size_t n = w.read(buf.data(), buf.size());
    EXPECT_GT(n, 0u);
    if (n == 0) break;  // a writer that stalls fails, it does not hang
    out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
  }
  return out;
}

/// The stream of n random tokens in a pool of this dtype (block 16), read out in 4 KiB pieces,
/// and its payload checksum.
struct written_stream {
  std::vector<std::byte> bytes;
  uint32_t payload_crc = 0;
};
written_stream stream_of(kv_dtype dt, kv_wire wire, uint32_t n) {
  auto src = make_pool(shape(16, dt));
  auto h = fill(*src, n);
  auto w = kv_stream_writer::open(*src, h, wire);
  EXPECT_TRUE(w.has_value());
  if (!w) return {};
  written_stream out;
  out.bytes = read_all(*w, 4096);
  out.payload_crc = w->payload_crc();
  return out;
}

/// Every element of the first n tokens is bit-identical.
bool same_kv(const kv_block_pool& a, const kv_handle& ha, const kv_block_pool& b, const kv_handle& hb, uint32_t n) {
  const auto& l = a.layout();
  std::vector<float> k1(l.head_dim), v1(l.head_dim), k2(l.head_dim), v2(l.head_dim);
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t layer = 0; layer < l.n_layer; ++layer)
      for (uint32_t head = 0; head < l.n_head_kv; ++head) {
        a.read_token(ha, t, layer, head, k1.data(), v1.data());
        b.read_token(hb, t, layer, head, k2.data(), v2.data());
        if (std::memcmp(k1.data(), k2.data(), k1.size() * 4) || std::memcmp(v1.data(), v2.data(), v1.size() * 4))
          return false;
      }
  return true;
}

/// Feeds bytes in random pieces of 1..max_piece; the first error, or success.
expected<void> feed_in_pieces(kv_stream_reader& r, std::span<const std::byte> bytes, size_t max_piece, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> len(1, max_piece);
  for (size_t at = 0; at < bytes.size();) {
    const size_t n = std::min(len(rng), bytes.size() - at);
    if (auto ok = r.feed(bytes.subspan(at, n)); !ok) return ok;
    at += n;
  }
  return {};
}

TEST(kv_stream_test, the_writer_in_pieces_of_any_size_gives_kv_encodes_bytes) {
  for (kv_dtype dt : {kv_dtype::f32, kv_dtype::f16}) {
    auto pool = make_pool(shape(16, dt));
    auto h = fill(*pool, 37);
    for (kv_wire wire : {kv_wire::f32, kv_wire::f16, kv_wire::int8}) {
      auto whole = kv_encode(*pool, h, wire);
      ASSERT_TRUE(whole.has_value());
      uint32_t crc_in_header = 0;
      std::memcpy(&crc_in_header, whole->data() + 32, 4);
      for (size_t piece : {size_t{1}, size_t{7}, size_t{40}, size_t{1000}, size_t{4096}, whole->size()}) {
        auto w = kv_stream_writer::open(*pool, h, wire);
        ASSERT_TRUE(w.has_value());
        EXPECT_EQ(w->size(), whole->size());
        auto got = read_all(*w, piece);
        ASSERT_EQ(got.size(), whole->size()) << "piece " << piece;
        EXPECT_EQ(w->payload_crc(), crc_in_header) << "piece " << piece;
        // Only the header's payload checksum differs (0 in a streamed header; its own checksum
        // covers that 0).
        EXPECT_TRUE(std::equal(got.begin() + kv_stream_header_bytes, got.end(), whole->begin() + kv_stream_header_bytes))
            << "piece " << piece;
        EXPECT_TRUE(std::equal(got.begin(), got.begin() + 32, whole->begin())) << "piece " << piece;
        EXPECT_TRUE(kv_peek(got).has_value());
      }
    }
  }
}

TEST(kv_stream_test, the_reader_in_pieces_of_any_size_stores_what_kv_decode_stores) {
  auto src = make_pool(shape(16, kv_dtype::f16));
  auto h = fill(*src, 45);
  for (kv_wire wire : {kv_wire::f16, kv_wire::f32, kv_wire::int8}) {
    auto w = kv_stream_writer::open(*src, h, wire);
    ASSERT_TRUE(w.has_value());
    const auto stream = read_all(*w, 3000);
    auto whole = kv_encode(*src, h, wire);
    ASSERT_TRUE(whole.has_value());
    auto ref_pool = make_pool(shape(32, kv_dtype::f32));
    kv_handle ref;
    ASSERT_TRUE(kv_decode(*whole, *ref_pool, ref).has_value());
    for (size_t max_piece : {size_t{1}, size_t{50}, size_t{5000}, stream.size()}) {
      auto dst = make_pool(shape(32, kv_dtype::f32));  // another block size and element type
      kv_stream_reader r(*dst, kv_handle{});
      ASSERT_TRUE(feed_in_pieces(r, stream, max_piece, 11).has_value()) << "max piece " << max_piece;
      EXPECT_EQ(r.received(), stream.size());
      ASSERT_TRUE(r.finish(w->payload_crc()).has_value());
      const kv_handle got = r.take();
      EXPECT_EQ(got.n_tokens, 45u);
      EXPECT_TRUE(same_kv(*ref_pool, ref, *dst, got, 45)) << "max piece " << max_piece;
    }
  }
}

TEST(kv_stream_test, the_length_counts_only_after_a_verified_finish) {
  const auto [stream, crc] = stream_of(kv_dtype::f16, kv_wire::f16, 20);
  auto dst = make_pool(shape(16, kv_dtype::f16), 8);
  auto existing = fill(*dst, 3, 9);  // a reservation with 3 tokens, grown by the stream
  kv_stream_reader r(*dst, existing);
  ASSERT_TRUE(r.feed(stream).has_value());
  // Every byte is in, the checksum is not verified yet: a wrong one is refused at finish.
  auto bad = r.finish(crc ^ 1u);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.err().message.find("payload checksum mismatch"), std::string::npos) << bad.err().message;
  const kv_handle after = r.take();
  EXPECT_EQ(after.n_tokens, 3u);               // the rows written count for nothing
  EXPECT_EQ(after.blocks.size(), 2u);          // grown to the stream's 20 tokens: the caller releases
  kv_handle gone = after;
  EXPECT_TRUE(dst->release(gone).has_value());
  EXPECT_EQ(dst->used_blocks(), 0u);
}

TEST(kv_stream_test, damaged_cut_extended_and_forged_streams_are_refused) {
  const auto made = stream_of(kv_dtype::f32, kv_wire::int8, 20);
  const auto& good = made.bytes;  // (not a structured binding: clang 14 cannot capture one)
  const auto crc = made.payload_crc;
  auto refused = [&](std::vector<std::byte> bytes, const std::string& what, bool at_feed) {
    auto dst = make_pool(shape(16, kv_dtype::f32), 8);
    kv_stream_reader r(*dst, kv_handle{});
    auto fed = feed_in_pieces(r, bytes, 700, 5);
    EXPECT_EQ(!fed.has_value(), at_feed) << what;
    auto fin = r.finish(crc);
    ASSERT_FALSE(fin.has_value()) << what;
    EXPECT_EQ(fin.err().message.rfind("kv stream: ", 0), 0u) << fin.err().message;
    EXPECT_NE(fin.err().message.find(what), std::string::npos) << fin.err().message;
    if (!fed.has_value()) {  // the first error sticks
      auto again = r.feed(std::span<const std::byte>(good).first(1));
      ASSERT_FALSE(again.has_value());
      EXPECT_EQ(again.err().message, fed.err().message);
    }
    const kv_handle left = r.take();
    EXPECT_EQ(left.n_tokens, 0u) << what;
    kv_handle gone = left;
    if (!gone.empty()) {
      EXPECT_TRUE(dst->release(gone).has_value());
    }
    EXPECT_EQ(dst->used_blocks(), 0u);
  };
  auto flipped = good;
  flipped[kv_stream_header_bytes + 200] ^= std::byte{0x10};  // inside a row, not a scale
  refused(flipped, "payload checksum mismatch", false);
  refused(std::vector<std::byte>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2)), "truncated",
          false);
  refused(std::vector<std::byte>(good.begin(), good.begin() + 20), "truncated", false);
  auto extended = good;
  extended.push_back(std::byte{0});
  refused(extended, "trailing bytes", true);
  auto magic = good;
  magic[0] = std::byte{'X'};
  refused(magic, "bad magic", true);
  // A forged scale (the first row's) is refused when its block arrives, before it is stored.
  auto forged = good;
  const float nan = std::nanf("");
  std::memcpy(forged.data() + kv_stream_header_bytes, &nan, 4);
  refused(forged, "int8 row scale", true);
  // Another shape: refused at the header, nothing allocated.
  auto other = make_pool(shape(16, kv_dtype::f32, 4, 32));
  kv_stream_reader r(*other, kv_handle{});
  auto fed = r.feed(good);
  ASSERT_FALSE(fed.has_value());
  EXPECT_NE(fed.err().message.find("does not match the destination pool"), std::string::npos) << fed.err().message;
  EXPECT_EQ(other->used_blocks(), 0u);
  // Too few blocks for the header's tokens: out of memory before a row is written.
  auto small = make_pool(shape(16, kv_dtype::f32), 1);
  kv_stream_reader oom(*small, kv_handle{});
  fed = oom.feed(good);
  ASSERT_FALSE(fed.has_value());
  EXPECT_EQ(fed.err().code, errc::out_of_memory);
  EXPECT_EQ(small->used_blocks(), 0u);
}

}  // namespace
}  // namespace fw
