#include "runtime/gguf/gguf_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

namespace fw {

static_assert(std::endian::native == std::endian::little, "GGUF writing assumes a little-endian host");

namespace {

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.insert(out.end(), b, b + sizeof(T));
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

void pad_to(std::vector<uint8_t>& out, uint64_t alignment) {
  out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
}

uint64_t padded(uint64_t n, uint64_t alignment) { return (n + alignment - 1) / alignment * alignment; }

}  // namespace

gguf_writer::gguf_writer(uint32_t alignment) : alignment_(alignment == 0 ? 32 : alignment) {
  if (alignment_ != 32) add_uint32("general.alignment", alignment_);
}

gguf_writer::gguf_writer(gguf_writer&& o) noexcept
    : alignment_(o.alignment_),
      kv_count_(o.kv_count_),
      kv_bytes_(std::move(o.kv_bytes_)),
      tensors_(std::move(o.tensors_)),
      offsets_(std::move(o.offsets_)),
      stream_path_(std::move(o.stream_path_)),
      fd_(std::exchange(o.fd_, -1)),
      data_start_(o.data_start_),
      begun_(o.begun_),
      late_(o.late_) {}

gguf_writer::~gguf_writer() {
  if (fd_ >= 0) ::close(fd_);
}

void gguf_writer::begin_kv(const std::string& key, gguf_type type) {
  late_ = late_ || begun_;
  ++kv_count_;
  put_string(kv_bytes_, key);
  put<uint32_t>(kv_bytes_, static_cast<uint32_t>(type));
}

void gguf_writer::add_uint8(const std::string& key, uint8_t v) { begin_kv(key, gguf_type::u8); put(kv_bytes_, v); }
void gguf_writer::add_int8(const std::string& key, int8_t v) { begin_kv(key, gguf_type::i8); put(kv_bytes_, v); }
void gguf_writer::add_uint16(const std::string& key, uint16_t v) { begin_kv(key, gguf_type::u16); put(kv_bytes_, v); }
void gguf_writer::add_int16(const std::string& key, int16_t v) { begin_kv(key, gguf_type::i16); put(kv_bytes_, v); }
void gguf_writer::add_uint32(const std::string& key, uint32_t v) { begin_kv(key, gguf_type::u32); put(kv_bytes_, v); }
void gguf_writer::add_int32(const std::string& key, int32_t v) { begin_kv(key, gguf_type::i32); put(kv_bytes_, v); }
void gguf_writer::add_uint64(const std::string& key, uint64_t v) { begin_kv(key, gguf_type::u64); put(kv_bytes_, v); }
void gguf_writer::add_int64(const std::string& key, int64_t v) { begin_kv(key, gguf_type::i64); put(kv_bytes_, v); }
void gguf_writer::add_float32(const std::string& key, float v) { begin_kv(key, gguf_type::f32); put(kv_bytes_, v); }
void gguf_writer::add_float64(const std::string& key, double v) { begin_kv(key, gguf_type::f64); put(kv_bytes_, v); }

void gguf_writer::add_bool(const std::string& key, bool v) {
  begin_kv(key, gguf_type::boolean);
  put<uint8_t>(kv_bytes_, v ? 1 : 0);
}

void gguf_writer::add_string(const std::string& key, const std::string& v) {
  begin_kv(key, gguf_type::string);
  put_string(kv_bytes_, v);
}

void gguf_writer::add_string_array(const std::string& key, const std::vector<std::string>& v) {
  begin_kv(key, gguf_type::array);
  put<uint32_t>(kv_bytes_, static_cast<uint32_t>(gguf_type::string));
  put<uint64_t>(kv_bytes_, v.size());
  for (const auto& s : v) put_string(kv_bytes_, s);
}

void gguf_writer::add_int32_array(const std::string& key, const std::vector<int32_t>& v) {
  begin_kv(key, gguf_type::array);
  put<uint32_t>(kv_bytes_, static_cast<uint32_t>(gguf_type::i32));
  put<uint64_t>(kv_bytes_, v.size());
  for (int32_t x : v) put(kv_bytes_, x);
}

void gguf_writer::add_float32_array(const std::string& key, const std::vector<float>& v) {
  begin_kv(key, gguf_type::array);
  put<uint32_t>(kv_bytes_, static_cast<uint32_t>(gguf_type::f32));
  put<uint64_t>(kv_bytes_, v.size());
  for (float x : v) put(kv_bytes_, x);
}

void gguf_writer::add_raw_array(const std::string& key, gguf_type elem_type, uint64_t count,
                                std::span<const uint8_t> encoded) {
  begin_kv(key, gguf_type::array);
  put<uint32_t>(kv_bytes_, static_cast<uint32_t>(elem_type));
  put<uint64_t>(kv_bytes_, count);
  kv_bytes_.insert(kv_bytes_.end(), encoded.begin(), encoded.end());
}

namespace {
template <class T>
void put_elems(std::vector<uint8_t>& out, const auto& values) {
  for (auto v : values) put<T>(out, static_cast<T>(v));
}
}  // namespace

void gguf_writer::add_value(const std::string& key, const gguf_value& v) {
  switch (v.type) {
    case gguf_type::u8: add_uint8(key, static_cast<uint8_t>(*v.as_uint())); return;
    case gguf_type::i8: add_int8(key, static_cast<int8_t>(*v.as_int())); return;
    case gguf_type::u16: add_uint16(key, static_cast<uint16_t>(*v.as_uint())); return;
    case gguf_type::i16: add_int16(key, static_cast<int16_t>(*v.as_int())); return;
    case gguf_type::u32: add_uint32(key, static_cast<uint32_t>(*v.as_uint())); return;
    case gguf_type::i32: add_int32(key, static_cast<int32_t>(*v.as_int())); return;
    case gguf_type::u64: add_uint64(key, *v.as_uint()); return;
    case gguf_type::i64: add_int64(key, *v.as_int()); return;
    case gguf_type::f32: add_float32(key, static_cast<float>(*v.as_float())); return;
    case gguf_type::f64: add_float64(key, *v.as_float()); return;
    case gguf_type::boolean: add_bool(key, *v.as_bool()); return;
    case gguf_type::string: add_string(key, *v.as_string()); return;
    case gguf_type::array: break;
  }
  if (const auto* strs = v.as_string_array()) {
    add_string_array(key, *strs);
    return;
  }
  std::vector<uint8_t> enc;
  uint64_t count = 0;
  if (const auto* ints = v.as_int_array()) {
    count = ints->size();
    switch (v.elem_type) {
      case gguf_type::u8: put_elems<uint8_t>(enc, *ints); break;
      case gguf_type::i8: put_elems<int8_t>(enc, *ints); break;
      case gguf_type::u16: put_elems<uint16_t>(enc, *ints); break;
      case gguf_type::i16: put_elems<int16_t>(enc, *ints); break;
      case gguf_type::u32: put_elems<uint32_t>(enc, *ints); break;
      case gguf_type::i32: put_elems<int32_t>(enc, *ints); break;
      case gguf_type::u64: put_elems<uint64_t>(enc, *ints); break;
      case gguf_type::i64: put_elems<int64_t>(enc, *ints); break;
      case gguf_type::boolean: put_elems<uint8_t>(enc, *ints); break;
      default: break;
    }
  } else if (const auto* fl = v.as_float_array()) {
    count = fl->size();
    if (v.elem_type == gguf_type::f64) put_elems<double>(enc, *fl);
    else put_elems<float>(enc, *fl);
  }
  add_raw_array(key, v.elem_type, count, enc);
}

void gguf_writer::push(tensor t) {
  late_ = late_ || begun_;
  tensors_.push_back(std::move(t));
}

void gguf_writer::add_tensor_owned(const std::string& name, std::vector<uint64_t> ne, ggml_type type,
                                   std::vector<uint8_t> data) {
  const uint64_t size = data.size();
  push(tensor{name, std::move(ne), static_cast<uint32_t>(type), std::move(data), size, false, true});
}

void gguf_writer::add_tensor(const std::string& name, std::vector<uint64_t> ne, ggml_type type,
                             std::span<const uint8_t> data) {
  add_tensor_raw(name, std::move(ne), static_cast<uint32_t>(type), data);
}

void gguf_writer::add_tensor_raw(const std::string& name, std::vector<uint64_t> ne,
                                 uint32_t raw_type, std::span<const uint8_t> data) {
  push(tensor{name, std::move(ne), raw_type, {data.begin(), data.end()}, data.size(), false, true});
}

void gguf_writer::declare_tensor(const std::string& name, std::vector<uint64_t> ne, ggml_type type) {
  uint64_t rows = 1;
  for (size_t i = 1; i < ne.size(); ++i) rows *= ne[i];
  const uint64_t size = ne.empty() ? 0 : row_bytes(type_traits(type), ne[0]) * rows;
  push(tensor{name, std::move(ne), static_cast<uint32_t>(type), {}, size, true, false});
}

std::vector<uint8_t> gguf_writer::header() const {
  std::vector<uint8_t> out;
  put<uint32_t>(out, 0x46554747);  // "GGUF"
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kv_count_);
  out.insert(out.end(), kv_bytes_.begin(), kv_bytes_.end());
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t n : t.ne) put<uint64_t>(out, n);
    put<uint32_t>(out, t.raw_type);
    put<uint64_t>(out, offset);
    offset += padded(t.size, alignment_);
  }
  pad_to(out, alignment_);
  return out;
}

expected<void> gguf_writer::put_at(uint64_t offset, const std::vector<uint8_t>& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(errc::io_error, "cannot write '" + stream_path_ + "': " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return {};
}

expected<void> gguf_writer::begin_data() {
  if (begun_) return make_error(errc::invalid_argument, "gguf_writer: begin_data called twice");
  begun_ = true;
  offsets_.clear();
  uint64_t offset = 0;
  for (const auto& t : tensors_) offsets_.push_back(offset), offset += padded(t.size, alignment_);
  if (stream_path_.empty()) return {};
  const std::vector<uint8_t> head = header();
  data_start_ = head.size();
  fd_ = ::open(stream_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return make_error(errc::io_error, "cannot create '" + stream_path_ + "': " + std::strerror(errno));
  // Sized at once: the gaps (padding, tensors not yet filled) read as zeros.
  if (::ftruncate(fd_, static_cast<off_t>(data_start_ + offset)) != 0)
    return make_error(errc::io_error, "cannot size '" + stream_path_ + "': " + std::strerror(errno));
  if (auto ok = put_at(0, head); !ok) return ok;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    auto& t = tensors_[i];
    if (t.declared) continue;
    if (auto ok = put_at(data_start_ + offsets_[i], t.data); !ok) return ok;
    std::vector<uint8_t>().swap(t.data);
  }
  return {};
}

expected<void> gguf_writer::fill_tensor(const std::string& name, std::vector<uint8_t> data) {
  if (!begun_) return make_error(errc::invalid_argument, "gguf_writer: fill_tensor '" + name + "' before begin_data");
  // The latest declaration of that name (a test may declare duplicates on purpose).
  size_t i = tensors_.size();
  while (i > 0 && !(tensors_[i - 1].name == name && tensors_[i - 1].declared)) --i;
  if (i == 0 || i > offsets_.size())
    return make_error(errc::invalid_argument, "gguf_writer: tensor '" + name + "' was not declared");
  auto& t = tensors_[i - 1];
  if (t.filled) return make_error(errc::invalid_argument, "gguf_writer: tensor '" + name + "' filled twice");
  if (data.size() != t.size)
    return make_error(errc::invalid_argument, "gguf_writer: tensor '" + name + "' declared as " + std::to_string(t.size) +
                                                  " bytes, given " + std::to_string(data.size()));
  t.filled = true;
  if (fd_ < 0) {
    t.data = std::move(data);
    return {};
  }
  return put_at(data_start_ + offsets_[i - 1], data);
}

expected<void> gguf_writer::finish() {
  if (!begun_) return make_error(errc::invalid_argument, "gguf_writer: finish before begin_data");
  if (late_) return make_error(errc::invalid_argument, "gguf_writer: metadata or a tensor was added after begin_data");
  for (const auto& t : tensors_)
    if (!t.filled) return make_error(errc::invalid_argument, "gguf_writer: tensor '" + t.name + "' was never filled");
  if (fd_ >= 0) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return make_error(errc::io_error, "cannot write '" + stream_path_ + "': " + std::strerror(errno));
  }
  return {};
}

std::vector<uint8_t> gguf_writer::bytes() const {
  std::vector<uint8_t> out = header();
  for (const auto& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    out.resize(out.size() + (t.size - t.data.size()), 0);  // a declared tensor not filled yet
    pad_to(out, alignment_);
  }
  return out;
}

expected<void> gguf_writer::write(const std::string& path) const {
  if (fd_ >= 0 || !stream_path_.empty())
    return make_error(errc::invalid_argument, "gguf_writer: this image streams to '" + stream_path_ + "' (finish it)");
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return make_error(errc::io_error, "cannot create '" + path + "': " + std::strerror(errno));
  auto put_bytes = [&](const void* p, size_t n) { return std::fwrite(p, 1, n, f.get()) == n; };
  const std::vector<uint8_t> head = header();
  bool ok = put_bytes(head.data(), head.size());
  static const uint8_t zeros[256] = {};
  for (const auto& t : tensors_) {
    ok = ok && put_bytes(t.data.data(), t.data.size());
    for (uint64_t gap = padded(t.size, alignment_) - t.data.size(); ok && gap > 0;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(gap, sizeof zeros));
      ok = put_bytes(zeros, n);
      gap -= n;
    }
  }
  if (!ok) return make_error(errc::io_error, "cannot write '" + path + "': " + std::strerror(errno));
  if (std::fclose(f.release()) != 0)
    return make_error(errc::io_error, "cannot write '" + path + "': " + std::strerror(errno));
  return {};
}

}  // namespace fw
