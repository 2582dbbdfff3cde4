// Tests for gguf_file (validation of every field against the file size) and gguf_writer.
#include "runtime/gguf/gguf_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <numbers>
#include <random>

#include "runtime/gguf/gguf_writer.hpp"

namespace fw {
namespace {

using bytes_t = std::vector<uint8_t>;

expected<std::shared_ptr<const gguf_file>> parse(const bytes_t& b) { return gguf_file::from_bytes(b); }

void patch_u32(bytes_t& b, size_t pos, uint32_t v) { std::memcpy(b.data() + pos, &v, 4); }
void patch_u64(bytes_t& b, size_t pos, uint64_t v) { std::memcpy(b.data() + pos, &v, 8); }

// Position of the first occurrence of a length-prefixed string (its 8-byte length field).
size_t find_string_field(const bytes_t& b, const std::string& s) {
  for (size_t i = 8; i + s.size() <= b.size(); ++i) {
    uint64_t len = 0;
    std::memcpy(&len, b.data() + i - 8, 8);
    if (len == s.size() && std::memcmp(b.data() + i, s.data(), s.size()) == 0) return i - 8;
  }
  ADD_FAILURE() << "string '" << s << "' not found";
  return 0;
}

// Positions of a tensor info's fields (for a tensor with n_dims dimensions).
struct tensor_fields {
  size_t n_dims, ne, type, offset;
};
tensor_fields find_tensor_fields(const bytes_t& b, const std::string& name, uint32_t n_dims) {
  const size_t name_pos = find_string_field(b, name);
  const size_t dims = name_pos + 8 + name.size();
  return {dims, dims + 4, dims + 4 + 8 * n_dims, dims + 4 + 8 * n_dims + 4};
}

template <class T>
void expect_error(const expected<T>& r, errc code, const std::vector<std::string>& phrases) {
  ASSERT_FALSE(r.has_value()) << "expected an error containing '" << phrases.front() << "'";
  EXPECT_EQ(r.err().code, code) << r.err().what();
  EXPECT_NE(r.err().message.find("byte"), std::string::npos) << r.err().what();
  for (const auto& p : phrases) EXPECT_NE(r.err().message.find(p), std::string::npos) << r.err().what();
}

bytes_t f32_bytes(const std::vector<float>& v) {
  bytes_t b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// A small valid image with one key and one f32 tensor [32, 2].
bytes_t small_image(uint32_t alignment = 32) {
  gguf_writer w(alignment);
  w.add_string("general.architecture", "llama");
  std::vector<float> v(64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  w.add_tensor("blk.0.ffn_up.weight", {32, 2}, ggml_type::f32, f32_bytes(v));
  return w.bytes();
}

// An image holding every metadata kind and several tensors.
bytes_t full_image() {
  gguf_writer w;
  w.add_uint8("k.u8", 255);
  w.add_int8("k.i8", -128);
  w.add_uint16("k.u16", 65535);
  w.add_int16("k.i16", -32768);
  w.add_uint32("k.u32", std::numeric_limits<uint32_t>::max());
  w.add_int32("k.i32", std::numeric_limits<int32_t>::min());
  w.add_uint64("k.u64", std::numeric_limits<uint64_t>::max());
  w.add_int64("k.i64", std::numeric_limits<int64_t>::min());
  w.add_float32("k.f32", 1.5f);
  w.add_float64("k.f64", std::numbers::pi);
  w.add_bool("k.true", true);
  w.add_bool("k.false", false);
  w.add_string("k.str", "héllo \xe2\x9c\x93");
  w.add_string("k.empty", "");
  w.add_string_array("k.strs", {"a", "", "Ġthe"});
  w.add_int32_array("k.i32s", {1, -2, 2147483647});
  w.add_float32_array("k.f32s", {0.25f, -1.0f});
  const uint8_t u8s[] = {7, 8, 9};
  w.add_raw_array("k.u8s", gguf_type::u8, 3, u8s);
  uint64_t u64s[] = {1, uint64_t{1} << 40};
  w.add_raw_array("k.u64s", gguf_type::u64, 2, {reinterpret_cast<const uint8_t*>(u64s), sizeof u64s});
  double f64s[] = {2.5};
  w.add_raw_array("k.f64s", gguf_type::f64, 1, {reinterpret_cast<const uint8_t*>(f64s), sizeof f64s});
  const uint8_t bools[] = {1, 0};
  w.add_raw_array("k.bools", gguf_type::boolean, 2, bools);
  w.add_int32_array("k.none", {});

  std::vector<float> a(6);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) * 0.5f;
  w.add_tensor("a", {3, 2}, ggml_type::f32, f32_bytes(a));
  bytes_t q8(2 * sizeof(block_q8_0), 0x11);
  w.add_tensor("b.q8", {64}, ggml_type::q8_0, q8);
  bytes_t f16(32 * 2, 0x22);
  w.add_tensor("c.f16", {4, 2, 2, 2}, ggml_type::f16, f16);
  return w.bytes();
}

// -- round trip --

TEST(gguf_file, round_trips_every_metadata_kind) {
  auto f = parse(full_image());
  ASSERT_TRUE(f) << f.err().what();
  const gguf_file& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), 32u);
  EXPECT_EQ(g.metadata().size(), 22u);
  EXPECT_EQ(g.get_uint("k.u8"), 255u);
  EXPECT_EQ(g.find("k.u8")->type, gguf_type::u8);
  EXPECT_EQ(g.find("k.i8")->as_int(), -128);
  EXPECT_EQ(g.get_uint("k.u16"), 65535u);
  EXPECT_EQ(g.find("k.i16")->as_int(), -32768);
  EXPECT_EQ(g.get_uint("k.u32"), std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(g.find("k.i32")->as_int(), std::numeric_limits<int32_t>::min());
  EXPECT_FALSE(g.get_uint("k.i32").has_value());
  EXPECT_EQ(g.get_uint("k.u64"), std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(g.find("k.u64")->as_int().has_value());
  EXPECT_EQ(g.find("k.i64")->as_int(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(g.get_float("k.f32"), 1.5);
  EXPECT_EQ(g.get_float("k.f64"), std::numbers::pi);
  EXPECT_EQ(g.get_bool("k.true"), true);
  EXPECT_EQ(g.get_bool("k.false"), false);
  EXPECT_FALSE(g.get_bool("k.u8").has_value());
  EXPECT_EQ(g.get_string("k.str"), "héllo \xe2\x9c\x93");
  EXPECT_EQ(g.get_string("k.empty"), "");
  EXPECT_FALSE(g.get_string("k.u8").has_value());
  EXPECT_FALSE(g.get_uint("missing").has_value());
  EXPECT_EQ(g.find("missing"), nullptr);

  const gguf_value* strs = g.find("k.strs");
  ASSERT_NE(strs, nullptr);
  EXPECT_EQ(strs->type, gguf_type::array);
  EXPECT_EQ(strs->elem_type, gguf_type::string);
  EXPECT_EQ(*strs->as_string_array(), (std::vector<std::string>{"a", "", "Ġthe"}));
  EXPECT_EQ(*g.find("k.i32s")->as_int_array(), (std::vector<int64_t>{1, -2, 2147483647}));
  EXPECT_EQ(*g.find("k.f32s")->as_float_array(), (std::vector<double>{0.25, -1.0}));
  EXPECT_EQ(*g.find("k.u8s")->as_int_array(), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(*g.find("k.u64s")->as_int_array(), (std::vector<int64_t>{1, int64_t{1} << 40}));
  EXPECT_EQ(*g.find("k.f64s")->as_float_array(), (std::vector<double>{2.5}));
  EXPECT_EQ(*g.find("k.bools")->as_int_array(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(g.find("k.none")->array_size(), 0u);
  EXPECT_EQ(g.find("k.strs")->array_size(), 3u);
  EXPECT_EQ(g.find("k.u8")->array_size(), 0u);
  EXPECT_EQ(g.metadata()[0].first, "k.u8");  // file order is kept
}

TEST(gguf_file, round_trips_tensors) {
  auto f = parse(full_image());
  ASSERT_TRUE(f) << f.err().what();
  const gguf_file& g = **f;
  ASSERT_EQ(g.tensors().size(), 3u);
  const gguf_tensor_info* a = g.find_tensor("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->ne, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(a->type, ggml_type::f32);
  EXPECT_EQ(a->n_elements(), 6u);
  EXPECT_EQ(a->rows(), 2u);
  EXPECT_EQ(a->n_bytes, 24u);
  float back[6];
  std::memcpy(back, a->data, sizeof back);
  EXPECT_EQ(back[5], 2.5f);

  const gguf_tensor_info* q = g.find_tensor("b.q8");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, ggml_type::q8_0);
  EXPECT_EQ(q->n_bytes, 2 * sizeof(block_q8_0));
  EXPECT_EQ(q->offset % 32, 0u);
  EXPECT_EQ(q->data[0], 0x11);
  EXPECT_EQ(q->data[q->n_bytes - 1], 0x11);

  const gguf_tensor_info* h = g.find_tensor("c.f16");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->ne.size(), 4u);
  EXPECT_EQ(h->n_elements(), 32u);
  EXPECT_EQ(h->rows(), 8u);
  EXPECT_EQ(h->n_bytes, 64u);
  EXPECT_EQ(h->data - a->data, static_cast<ptrdiff_t>(h->offset - a->offset));
  EXPECT_EQ(g.find_tensor("nope"), nullptr);
}

TEST(gguf_file, honours_custom_alignment) {
  auto f = parse(small_image(64));
  ASSERT_TRUE(f) << f.err().what();
  EXPECT_EQ((*f)->alignment(), 64u);
  EXPECT_EQ((*f)->get_uint("general.alignment"), 64u);
}

TEST(gguf_file, accepts_version_2) {
  bytes_t b = small_image();
  patch_u32(b, 4, 2);
  auto f = parse(b);
  ASSERT_TRUE(f) << f.err().what();
  EXPECT_EQ((*f)->version(), 2u);
}

TEST(gguf_file, opens_written_file_via_mmap) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string path = (dir / ("fw_gguf_test_" + std::to_string(::getpid()) + ".gguf")).string();
  gguf_writer w;
  w.add_string("general.architecture", "llama");
  w.add_tensor("t", {4}, ggml_type::f32, f32_bytes({1, 2, 3, 4}));
  ASSERT_TRUE(w.write(path));
  auto f = gguf_file::open(path);
  std::filesystem::remove(path);  // the mapping stays valid after unlink
  ASSERT_TRUE(f) << f.err().what();
  EXPECT_EQ((*f)->path(), path);
  EXPECT_EQ((*f)->file_size(), w.bytes().size());
  EXPECT_EQ((*f)->get_string("general.architecture"), "llama");
  float v[4];
  std::memcpy(v, (*f)->find_tensor("t")->data, sizeof v);
  EXPECT_EQ(v[3], 4.0f);
}

// The same image three ways: tensors given in order, declared and filled in reverse order in
// memory, and declared and filled in reverse order straight into a file.
TEST(gguf_writer, streamed_and_declared_images_equal_the_given_one) {
  const bytes_t a = f32_bytes({1, 2, 3}), q8(2 * sizeof(block_q8_0), 0x5a), b = f32_bytes({4, 5, 6, 7});
  auto start = [](gguf_writer& w) {
    w.add_string("general.architecture", "llama");
    w.add_uint32("k.n", 7);
  };
  gguf_writer given(64);
  start(given);
  given.add_tensor("a", {3}, ggml_type::f32, a);
  given.add_tensor("q", {32, 2}, ggml_type::q8_0, q8);
  given.add_tensor("b", {2, 2}, ggml_type::f32, b);
  const bytes_t want = given.bytes();

  const std::string path = (std::filesystem::temp_directory_path() /
                            ("fw_gguf_stream_" + std::to_string(::getpid()) + ".gguf")).string();
  for (bool stream : {false, true}) {
    gguf_writer w(64);
    start(w);
    w.add_tensor("a", {3}, ggml_type::f32, a);  // given with its bytes, among declared ones
    w.declare_tensor("q", {32, 2}, ggml_type::q8_0);
    w.declare_tensor("b", {2, 2}, ggml_type::f32);
    if (stream) w.stream_to(path);
    ASSERT_TRUE(w.begin_data());
    ASSERT_TRUE(w.fill_tensor("b", b));
    ASSERT_TRUE(w.fill_tensor("q", q8));
    ASSERT_TRUE(w.finish());
    if (!stream) {
      EXPECT_EQ(w.bytes(), want);
      continue;
    }
    auto f = gguf_file::open(path);
    ASSERT_TRUE(f) << f.err().what();
    EXPECT_EQ((*f)->file_size(), want.size());
    std::ifstream in(path, std::ios::binary);
    const bytes_t got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(got, want);
    std::filesystem::remove(path);
  }
  // write() goes tensor by tensor without a second image; same bytes.
  ASSERT_TRUE(given.write(path));
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(bytes_t((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), want);
  std::filesystem::remove(path);
}

TEST(gguf_writer, refuses_fills_that_do_not_match_the_declarations) {
  gguf_writer w;
  w.declare_tensor("q", {32, 2}, ggml_type::q8_0);
  w.declare_tensor("f", {4}, ggml_type::f32);
  EXPECT_FALSE(w.fill_tensor("f", f32_bytes({1, 2, 3, 4})));  // before begin_data
  ASSERT_TRUE(w.begin_data());
  EXPECT_FALSE(w.begin_data());
  auto wrong = w.fill_tensor("f", f32_bytes({1, 2, 3}));
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.err().message.find("declared as 16 bytes, given 12"), std::string::npos) << wrong.err().what();
  EXPECT_FALSE(w.fill_tensor("nope", f32_bytes({1})));
  ASSERT_TRUE(w.fill_tensor("f", f32_bytes({1, 2, 3, 4})));
  EXPECT_FALSE(w.fill_tensor("f", f32_bytes({1, 2, 3, 4})));  // twice
  auto unfilled = w.finish();
  ASSERT_FALSE(unfilled);
  EXPECT_NE(unfilled.err().message.find("'q' was never filled"), std::string::npos) << unfilled.err().what();
  ASSERT_TRUE(w.fill_tensor("q", bytes_t(2 * sizeof(block_q8_0), 1)));
  ASSERT_TRUE(w.finish());
  w.add_uint32("k.late", 1);  // after the header was laid out
  EXPECT_FALSE(w.finish());
  gguf_writer s;
  s.declare_tensor("f", {4}, ggml_type::f32);
  s.stream_to("/nonexistent/dir/out.gguf");
  auto cannot = s.begin_data();
  ASSERT_FALSE(cannot);
  EXPECT_EQ(cannot.err().code, errc::io_error);
  EXPECT_FALSE(s.write("/tmp/x.gguf"));  // a streaming writer has no in-memory image to write
}

TEST(gguf_file, open_reports_io_errors) {
  auto missing = gguf_file::open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.err().code, errc::io_error);
  EXPECT_NE(missing.err().message.find("/nonexistent/dir/model.gguf"), std::string::npos);
  auto dir = gguf_file::open(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.err().code, errc::io_error);
  EXPECT_FALSE(gguf_writer().write("/nonexistent/dir/out.gguf"));
}

TEST(gguf_file, open_names_the_path_in_parse_errors) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("fw_gguf_bad_" + std::to_string(::getpid()) + ".gguf")).string();
  { FILE* f = std::fopen(path.c_str(), "wb"); std::fputs("NOTGGUF!", f); std::fclose(f); }
  auto r = gguf_file::open(path);
  std::filesystem::remove(path);
  expect_error(r, errc::malformed_file, {path, "magic"});
}

// -- malformed files --

TEST(gguf_file, rejects_truncation_everywhere) {
  const bytes_t full = small_image();
  const size_t tensor_name = find_string_field(full, "blk.0.ffn_up.weight");
  for (size_t cut : {size_t{0}, size_t{3}, size_t{6}, size_t{12}, size_t{20}, size_t{30},
                     tensor_name - 3, tensor_name + 12, tensor_name + 40, full.size() - 100,
                     full.size() - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    bytes_t b(full.begin(), full.begin() + static_cast<ptrdiff_t>(cut));
    auto r = parse(b);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.err().code, errc::malformed_file) << r.err().what();
    EXPECT_NE(r.err().message.find("byte"), std::string::npos) << r.err().what();
  }
  expect_error(parse(bytes_t(full.begin(), full.begin() + 20)), errc::malformed_file,
               {"at byte 16", "kv_count", "ends"});
  expect_error(parse(bytes_t{}),
               errc::malformed_file, {"byte 0"});
  expect_error(parse(bytes_t(full.begin(), full.end() - 1)), errc::malformed_file,
               {"blk.0.ffn_up.weight", "extends past the end"});
}

TEST(gguf_file, rejects_bad_magic) {
  bytes_t b = small_image();
  b[0] = 'X';
  expect_error(parse(b), errc::malformed_file, {"at byte 0", "magic"});
}

TEST(gguf_file, rejects_unsupported_versions) {
  bytes_t b = small_image();
  patch_u32(b, 4, 1);
  expect_error(parse(b), errc::unsupported, {"at byte 4", "version 1"});
  patch_u32(b, 4, 99);
  expect_error(parse(b), errc::unsupported, {"version 99"});
  patch_u32(b, 4, 0x03000000);
  expect_error(parse(b), errc::unsupported, {"big-endian"});
}

TEST(gguf_file, rejects_absurd_counts) {
  bytes_t b = small_image();
  patch_u64(b, 16, std::numeric_limits<uint64_t>::max());
  expect_error(parse(b), errc::malformed_file,
               {"at byte 16: kv_count 18446744073709551615 exceeds what the file can hold"});
  b = small_image();
  patch_u64(b, 8, uint64_t{1} << 40);
  expect_error(parse(b), errc::malformed_file, {"at byte 8", "tensor_count", "exceeds"});
  b = small_image();
  patch_u64(b, 16, 3);  // plausible count, but the third key runs into tensor infos / data
  EXPECT_FALSE(parse(b));
}

TEST(gguf_file, rejects_huge_string_length) {
  bytes_t b = small_image();
  patch_u64(b, 24, uint64_t{1} << 62);  // key length of the first kv
  expect_error(parse(b), errc::malformed_file, {"at byte 24", "key length", "exceeds"});
  b = small_image();
  const size_t value = 24 + 8 + std::strlen("general.architecture") + 4;
  patch_u64(b, value, std::numeric_limits<uint64_t>::max());
  expect_error(parse(b), errc::malformed_file,
               {"at byte " + std::to_string(value), "general.architecture", "length"});
}

TEST(gguf_file, rejects_huge_array_length) {
  gguf_writer w;
  w.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
  bytes_t b = w.bytes();
  const size_t count = 24 + 8 + std::strlen("tokenizer.ggml.tokens") + 4 + 4;
  patch_u64(b, count, uint64_t{1} << 60);
  expect_error(parse(b), errc::malformed_file,
               {"at byte " + std::to_string(count), "tokenizer.ggml.tokens", "length"});
  gguf_writer w2;
  w2.add_int32_array("ids", {1, 2, 3});
  b = w2.bytes();
  patch_u64(b, 24 + 8 + 3 + 4 + 4, 4);  // one element more than present
  expect_error(parse(b), errc::malformed_file, {"ids", "exceeds"});
}

TEST(gguf_file, rejects_unknown_value_types) {
  bytes_t b = small_image();
  const size_t type = 24 + 8 + std::strlen("general.architecture");
  patch_u32(b, type, 13);
  expect_error(parse(b), errc::malformed_file,
               {"at byte " + std::to_string(type), "unknown value type 13", "general.architecture"});
  gguf_writer w;
  w.add_raw_array("arr", static_cast<gguf_type>(77), 0, {});
  expect_error(parse(w.bytes()), errc::malformed_file, {"unknown element type 77"});
}

TEST(gguf_file, rejects_nested_arrays_as_unsupported) {
  gguf_writer w;
  w.add_raw_array("nested", gguf_type::array, 0, {});
  expect_error(parse(w.bytes()), errc::unsupported, {"nested"});
}

TEST(gguf_file, rejects_duplicate_keys) {
  gguf_writer w;
  w.add_uint32("a.b", 1);
  w.add_uint32("a.b", 2);
  expect_error(parse(w.bytes()), errc::malformed_file, {"duplicate key 'a.b'"});
}

TEST(gguf_file, names_unsupported_tensor_types) {
  gguf_writer w;
  w.add_tensor_raw("blk.0.ffn_up.weight", {256, 1}, 12, bytes_t(144));
  expect_error(parse(w.bytes()), errc::unsupported,
               {"tensor 'blk.0.ffn_up.weight' has type q4_k which this build cannot run"});
  gguf_writer w2;
  w2.add_tensor_raw("x", {32}, 5000, bytes_t(32));
  expect_error(parse(w2.bytes()), errc::malformed_file, {"'x'", "unknown type id 5000"});
}

TEST(gguf_file, rejects_rows_that_are_not_whole_blocks) {
  gguf_writer w;
  w.add_tensor("blk.0.attn_q.weight", {31, 2}, ggml_type::q4_0, bytes_t(36));
  expect_error(parse(w.bytes()), errc::malformed_file,
               {"blk.0.attn_q.weight", "ne[0] = 31", "not a multiple", "block size 32"});
}

TEST(gguf_file, rejects_element_count_overflow) {
  gguf_writer w;
  w.add_tensor("big", {uint64_t{1} << 40, uint64_t{1} << 40}, ggml_type::f32, {});
  expect_error(parse(w.bytes()), errc::malformed_file, {"'big'", "overflow"});
  gguf_writer w2;
  w2.add_tensor("neg", {uint64_t{1} << 63}, ggml_type::f32, {});
  expect_error(parse(w2.bytes()), errc::malformed_file, {"'neg'", "overflow"});
  gguf_writer w3;  // 2^62 f32 elements fit int64 but their byte size does not fit the file
  w3.add_tensor("huge", {uint64_t{1} << 62}, ggml_type::f32, {});
  expect_error(parse(w3.bytes()), errc::malformed_file, {"'huge'"});
}

TEST(gguf_file, rejects_tensor_data_past_eof) {
  bytes_t b = small_image();
  const auto at = find_tensor_fields(b, "blk.0.ffn_up.weight", 2);
  patch_u64(b, at.offset, 1 << 20);
  expect_error(parse(b), errc::malformed_file,
               {"at byte " + std::to_string(at.offset), "blk.0.ffn_up.weight", "extends past the end"});
  patch_u64(b, at.offset, std::numeric_limits<uint64_t>::max() - 31);  // aligned, would wrap
  expect_error(parse(b), errc::malformed_file, {"extends past the end"});
}

TEST(gguf_file, rejects_misaligned_tensor_offset) {
  bytes_t b = small_image();
  const auto at = find_tensor_fields(b, "blk.0.ffn_up.weight", 2);
  patch_u64(b, at.offset, 4);
  expect_error(parse(b), errc::malformed_file,
               {"at byte " + std::to_string(at.offset), "misaligned", "alignment 32"});
}

TEST(gguf_file, rejects_bad_dimension_counts) {
  bytes_t b = small_image();
  const auto at = find_tensor_fields(b, "blk.0.ffn_up.weight", 2);
  patch_u32(b, at.n_dims, 5);
  expect_error(parse(b), errc::malformed_file, {"at byte " + std::to_string(at.n_dims), "n_dims 5"});
  patch_u32(b, at.n_dims, 0);
  expect_error(parse(b), errc::malformed_file, {"n_dims 0"});
}

TEST(gguf_file, rejects_bad_alignment_values) {
  for (uint32_t a : {0u, 48u, 3u}) {
    SCOPED_TRACE(a);
    gguf_writer w;
    w.add_uint32("general.alignment", a);
    expect_error(parse(w.bytes()), errc::malformed_file, {"general.alignment", "power of two"});
  }
  gguf_writer w;
  w.add_string("general.alignment", "32");
  expect_error(parse(w.bytes()), errc::malformed_file, {"general.alignment", "string"});
}

TEST(gguf_file, rejects_duplicate_tensor_names) {
  gguf_writer w;
  w.add_tensor("t", {4}, ggml_type::f32, f32_bytes({1, 2, 3, 4}));
  w.add_tensor("t", {4}, ggml_type::f32, f32_bytes({1, 2, 3, 4}));
  expect_error(parse(w.bytes()), errc::malformed_file, {"duplicate tensor name 't'"});
}

TEST(gguf_file, rejects_empty_names) {
  gguf_writer w;
  w.add_uint32("", 1);
  expect_error(parse(w.bytes()), errc::malformed_file, {"empty metadata key"});
  gguf_writer w2;
  w2.add_tensor("", {4}, ggml_type::f32, f32_bytes({1, 2, 3, 4}));
  expect_error(parse(w2.bytes()), errc::malformed_file, {"empty tensor name"});
}

// Every parse must either fail cleanly or yield tensors that lie inside the image; run under
// ASan this also proves no read goes out of bounds.
void check_no_crash(const bytes_t& b) {
  auto r = parse(b);
  if (!r) {
    EXPECT_FALSE(r.err().message.empty());
    return;
  }
  for (const auto& t : (*r)->tensors()) {
    EXPECT_LE(t.offset + t.n_bytes, b.size());
    if (t.n_bytes > 0) {
      volatile uint8_t sink = t.data[0];  // touch both ends of the data
      sink = t.data[t.n_bytes - 1];
      (void)sink;
    }
  }
}

TEST(gguf_file, survives_truncation_and_corruption_fuzz) {
  const bytes_t full = full_image();
  for (size_t cut = 0; cut < full.size(); ++cut)
    check_no_crash(bytes_t(full.begin(), full.begin() + static_cast<ptrdiff_t>(cut)));
  std::mt19937_64 rng(42);
  const size_t header_end = find_string_field(full, "c.f16") + 64;  // metadata and tensor infos
  for (size_t pos = 0; pos < header_end; ++pos) {
    for (uint8_t v : {uint8_t{0x00}, uint8_t{0xff}, uint8_t{0x7f}, uint8_t{0x80},
                      static_cast<uint8_t>(rng())}) {
      bytes_t b = full;
      b[pos] = v;
      check_no_crash(b);
    }
  }
  for (int i = 0; i < 2000; ++i) {  // several random bytes at once
    bytes_t b = full;
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) b[rng() % header_end] = static_cast<uint8_t>(rng());
    check_no_crash(b);
  }
}

}  // namespace
}  // namespace fw
