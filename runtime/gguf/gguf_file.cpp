#include "runtime/gguf/gguf_file.hpp"

#include "kernels/format/fw_formats.hpp"

#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fw {

static_assert(std::endian::native == std::endian::little, "GGUF reading assumes a little-endian host");

namespace {

constexpr uint32_t gguf_magic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint32_t max_dims = 4;
// Smallest possible encodings, used to reject counts the remaining bytes cannot hold.
constexpr uint64_t min_kv_bytes = 8 + 1 + 4 + 1;              // key len, 1-char key, type, u8
constexpr uint64_t min_tensor_info_bytes = 8 + 1 + 4 + 8 + 4 + 8;  // name, n_dims, ne[0], type, offset

std::string at(uint64_t pos, const std::string& what) {
  return "at byte " + std::to_string(pos) + ": " + what;
}

error malformed(uint64_t pos, const std::string& what) {
  return make_error(errc::malformed_file, at(pos, what));
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// A bounds-checked reader over the file image. Every read checks the remaining size first, so
// no input can make it touch memory outside [base, base + size).
class cursor {
 public:
  cursor(const uint8_t* base, uint64_t size) : base_(base), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  template <class T>
  expected<T> read(std::string_view what) {
    if (remaining() < sizeof(T))
      return malformed(pos_, "file ends inside " + std::string(what) + " (needs " +
                                 std::to_string(sizeof(T)) + " bytes, " +
                                 std::to_string(remaining()) + " remain)");
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  expected<std::string> read_string(std::string_view what) {
    const uint64_t start = pos_;
    auto len = read<uint64_t>(std::string(what) + " length");
    if (!len) return len.err();
    if (*len > remaining())
      return malformed(start, std::string(what) + " length " + std::to_string(*len) +
                                  " exceeds the " + std::to_string(remaining()) +
                                  " bytes left in the file");
    std::string s(reinterpret_cast<const char*>(base_ + pos_), *len);
    pos_ += *len;
    return s;
  }

 private:
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

bool is_known_value_type(uint32_t t) { return t <= static_cast<uint32_t>(gguf_type::f64); }

const char* value_type_name(gguf_type t) {
  switch (t) {
    case gguf_type::u8: return "u8";
    case gguf_type::i8: return "i8";
    case gguf_type::u16: return "u16";
    case gguf_type::i16: return "i16";
    case gguf_type::u32: return "u32";
    case gguf_type::i32: return "i32";
    case gguf_type::f32: return "f32";
    case gguf_type::boolean: return "bool";
    case gguf_type::string: return "string";
    case gguf_type::array: return "array";
    case gguf_type::u64: return "u64";
    case gguf_type::i64: return "i64";
    case gguf_type::f64: return "f64";
  }
  return "unknown";
}

// Encoded size of one element (strings: their length prefix only).
uint64_t min_value_bytes(gguf_type t) {
  switch (t) {
    case gguf_type::u8: case gguf_type::i8: case gguf_type::boolean: return 1;
    case gguf_type::u16: case gguf_type::i16: return 2;
    case gguf_type::u32: case gguf_type::i32: case gguf_type::f32: return 4;
    case gguf_type::u64: case gguf_type::i64: case gguf_type::f64: case gguf_type::string: return 8;
    case gguf_type::array: return 4 + 8;
  }
  return 1;
}

bool is_unsigned(gguf_type t) {
  return t == gguf_type::u8 || t == gguf_type::u16 || t == gguf_type::u32 || t == gguf_type::u64;
}
bool is_signed(gguf_type t) {
  return t == gguf_type::i8 || t == gguf_type::i16 || t == gguf_type::i32 || t == gguf_type::i64;
}
bool is_float(gguf_type t) { return t == gguf_type::f32 || t == gguf_type::f64; }

// Reads one scalar of type t and widens it: unsigned -> uint64, signed -> int64, float -> double.
template <class Sink>
expected<void> read_scalar(cursor& c, gguf_type t, const std::string& what, Sink&& sink) {
  auto widen = [&](auto r) -> expected<void> {
    if (!r) return r.err();
    sink(*r);
    return {};
  };
  switch (t) {
    case gguf_type::u8: return widen(c.read<uint8_t>(what));
    case gguf_type::i8: return widen(c.read<int8_t>(what));
    case gguf_type::u16: return widen(c.read<uint16_t>(what));
    case gguf_type::i16: return widen(c.read<int16_t>(what));
    case gguf_type::u32: return widen(c.read<uint32_t>(what));
    case gguf_type::i32: return widen(c.read<int32_t>(what));
    case gguf_type::u64: return widen(c.read<uint64_t>(what));
    case gguf_type::i64: return widen(c.read<int64_t>(what));
    case gguf_type::f32: return widen(c.read<float>(what));
    case gguf_type::f64: return widen(c.read<double>(what));
    case gguf_type::boolean: {
      auto r = c.read<uint8_t>(what);
      if (!r) return r.err();
      sink(*r != 0);
      return {};
    }
    case gguf_type::string: case gguf_type::array: break;
  }
  return make_error(errc::internal, "read_scalar called on a non-scalar type");
}

expected<gguf_value> read_value(cursor& c, gguf_type type, const std::string& key) {
  gguf_value v;
  v.type = type;
  const std::string what = "value of " + quoted(key);
  if (type == gguf_type::string) {
    auto s = c.read_string(what);
    if (!s) return s.err();
    v.data = std::move(*s);
    return v;
  }
  if (type != gguf_type::array) {
    auto r = read_scalar(c, type, what, [&](auto x) {
      using X = decltype(x);
      if constexpr (std::is_same_v<X, bool>) v.data = x;
      else if constexpr (std::is_floating_point_v<X>) v.data = static_cast<double>(x);
      else if constexpr (std::is_signed_v<X>) v.data = static_cast<int64_t>(x);
      else v.data = static_cast<uint64_t>(x);
    });
    if (!r) return r.err();
    return v;
  }
  // Array: element type, count, then the elements.
  const uint64_t type_pos = c.pos();
  auto raw_elem = c.read<uint32_t>("array element type of " + quoted(key));
  if (!raw_elem) return raw_elem.err();
  if (!is_known_value_type(*raw_elem))
    return malformed(type_pos, "array " + quoted(key) + " has unknown element type " +
                                   std::to_string(*raw_elem));
  const auto elem = static_cast<gguf_type>(*raw_elem);
  if (elem == gguf_type::array)
    return make_error(errc::unsupported,
                      at(type_pos, "array " + quoted(key) + " holds nested arrays, which are not supported"));
  v.elem_type = elem;
  const uint64_t count_pos = c.pos();
  auto count = c.read<uint64_t>("array length of " + quoted(key));
  if (!count) return count.err();
  if (*count > c.remaining() / min_value_bytes(elem))
    return malformed(count_pos, "array " + quoted(key) + " length " + std::to_string(*count) +
                                    " of " + value_type_name(elem) + " exceeds the " +
                                    std::to_string(c.remaining()) + " bytes left in the file");
  const std::string elem_what = "element of " + quoted(key);
  if (elem == gguf_type::string) {
    std::vector<std::string> out;
    out.reserve(*count);
    for (uint64_t i = 0; i < *count; ++i) {
      auto s = c.read_string(elem_what);
      if (!s) return s.err();
      out.push_back(std::move(*s));
    }
    v.data = std::move(out);
  } else if (is_float(elem)) {
    std::vector<double> out;
    out.reserve(*count);
    for (uint64_t i = 0; i < *count; ++i) {
      auto r = read_scalar(c, elem, elem_what, [&](auto x) { out.push_back(static_cast<double>(x)); });
      if (!r) return r.err();
    }
    v.data = std::move(out);
  } else {
    std::vector<int64_t> out;
    out.reserve(*count);
    for (uint64_t i = 0; i < *count; ++i) {
      auto r = read_scalar(c, elem, elem_what, [&](auto x) { out.push_back(static_cast<int64_t>(x)); });
      if (!r) return r.err();
    }
    v.data = std::move(out);
  }
  return v;
}

}  // namespace

// -- gguf_value --

std::optional<uint64_t> gguf_value::as_uint() const {
  if (const auto* u = std::get_if<uint64_t>(&data)) return *u;
  if (const auto* i = std::get_if<int64_t>(&data); i && *i >= 0) return static_cast<uint64_t>(*i);
  return std::nullopt;
}

std::optional<int64_t> gguf_value::as_int() const {
  if (const auto* i = std::get_if<int64_t>(&data)) return *i;
  if (const auto* u = std::get_if<uint64_t>(&data);
      u && *u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return static_cast<int64_t>(*u);
  return std::nullopt;
}

std::optional<double> gguf_value::as_float() const {
  if (const auto* d = std::get_if<double>(&data)) return *d;
  if (const auto* i = std::get_if<int64_t>(&data)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<uint64_t>(&data)) return static_cast<double>(*u);
  return std::nullopt;
}

std::optional<bool> gguf_value::as_bool() const {
  if (const auto* b = std::get_if<bool>(&data)) return *b;
  return std::nullopt;
}

const std::string* gguf_value::as_string() const { return std::get_if<std::string>(&data); }

const std::vector<std::string>* gguf_value::as_string_array() const {
  return std::get_if<std::vector<std::string>>(&data);
}

const std::vector<int64_t>* gguf_value::as_int_array() const {
  return std::get_if<std::vector<int64_t>>(&data);
}

const std::vector<double>* gguf_value::as_float_array() const {
  return std::get_if<std::vector<double>>(&data);
}

size_t gguf_value::array_size() const {
  if (const auto* s = as_string_array()) return s->size();
  if (const auto* i = as_int_array()) return i->size();
  if (const auto* d = as_float_array()) return d->size();
  return 0;
}

// -- gguf_tensor_info --

uint64_t gguf_tensor_info::n_elements() const {
  if (ne.empty()) return 0;
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  return n;
}

// -- gguf_file --

expected<std::shared_ptr<const gguf_file>> gguf_file::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return make_error(errc::io_error, "cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return make_error(errc::io_error, "cannot stat '" + path + "': " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(errc::io_error, "'" + path + "' is not a regular file");
  }
  // The constructor is private, so make_shared cannot reach it; ownership is taken at once.
  std::shared_ptr<gguf_file> f(new gguf_file());
  f->path_ = path;
  f->size_ = static_cast<uint64_t>(st.st_size);
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      return make_error(errc::io_error, "cannot mmap '" + path + "': " + std::strerror(e));
    }
    f->base_ = static_cast<const uint8_t*>(p);
    f->mapped_ = true;
  }
  ::close(fd);  // the mapping keeps the file alive
  if (auto r = f->parse(); !r) return make_error(r.err().code, path + ": " + r.err().message);
  return std::shared_ptr<const gguf_file>(std::move(f));
}

expected<std::shared_ptr<const gguf_file>> gguf_file::from_bytes(std::span<const uint8_t> bytes,
                                                                  std::string name) {
  std::shared_ptr<gguf_file> f(new gguf_file());
  f->path_ = std::move(name);
  f->owned_.assign(bytes.begin(), bytes.end());
  f->base_ = f->owned_.data();
  f->size_ = f->owned_.size();
  if (auto r = f->parse(); !r) return make_error(r.err().code, f->path_ + ": " + r.err().message);
  return std::shared_ptr<const gguf_file>(std::move(f));
}

gguf_file::~gguf_file() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(base_), size_);
}

const gguf_value* gguf_file::find(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

std::optional<uint64_t> gguf_file::get_uint(std::string_view key) const {
  const auto* v = find(key);
  return v ? v->as_uint() : std::nullopt;
}

std::optional<double> gguf_file::get_float(std::string_view key) const {
  const auto* v = find(key);
  return v ? v->as_float() : std::nullopt;
}

std::optional<bool> gguf_file::get_bool(std::string_view key) const {
  const auto* v = find(key);
  return v ? v->as_bool() : std::nullopt;
}

std::optional<std::string> gguf_file::get_string(std::string_view key) const {
  const auto* v = find(key);
  const auto* s = v ? v->as_string() : nullptr;
  return s ? std::optional<std::string>(*s) : std::nullopt;
}

const gguf_tensor_info* gguf_file::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

expected<void> gguf_file::parse() {
  cursor c(base_, size_);

  // -- header --
  auto magic = c.read<uint32_t>("the GGUF magic");
  if (!magic) return magic.err();
  if (*magic != gguf_magic)
    return malformed(0, "bad magic (not a GGUF file)");
  auto version = c.read<uint32_t>("the GGUF version");
  if (!version) return version.err();
  if (*version == 1)
    return make_error(errc::unsupported,
                      at(4, "GGUF version 1 is not supported (only v2 and v3); re-convert the model"));
  if (*version != 2 && *version != 3) {
    if ((*version & 0xffff) == 0 && (*version >> 16) != 0)
      return make_error(errc::unsupported, at(4, "big-endian GGUF files are not supported"));
    return make_error(errc::unsupported, at(4, "GGUF version " + std::to_string(*version) +
                                                   " is not supported (only v2 and v3)"));
  }
  version_ = *version;
  auto tensor_count = c.read<uint64_t>("tensor_count");
  if (!tensor_count) return tensor_count.err();
  auto kv_count = c.read<uint64_t>("kv_count");
  if (!kv_count) return kv_count.err();
  if (*tensor_count > c.remaining() / min_tensor_info_bytes)
    return malformed(8, "tensor_count " + std::to_string(*tensor_count) +
                            " exceeds what the file can hold (" + std::to_string(c.remaining()) +
                            " bytes follow the header)");
  if (*kv_count > c.remaining() / min_kv_bytes)
    return malformed(16, "kv_count " + std::to_string(*kv_count) +
                             " exceeds what the file can hold (" + std::to_string(c.remaining()) +
                             " bytes follow the header)");

  // -- metadata --
  kv_.reserve(*kv_count);
  uint64_t alignment_pos = 0;
  for (uint64_t i = 0; i < *kv_count; ++i) {
    const uint64_t key_pos = c.pos();
    auto key = c.read_string("key");
    if (!key) return key.err();
    if (key->empty()) return malformed(key_pos, "empty metadata key");
    if (kv_index_.count(*key)) return malformed(key_pos, "duplicate key " + quoted(*key));
    const uint64_t type_pos = c.pos();
    auto raw_type = c.read<uint32_t>("value type of " + quoted(*key));
    if (!raw_type) return raw_type.err();
    if (!is_known_value_type(*raw_type))
      return malformed(type_pos, "key " + quoted(*key) + " has unknown value type " +
                                     std::to_string(*raw_type));
    if (*key == "general.alignment") alignment_pos = c.pos();
    auto value = read_value(c, static_cast<gguf_type>(*raw_type), *key);
    if (!value) return value.err();
    kv_index_.emplace(*key, kv_.size());
    kv_.emplace_back(std::move(*key), std::move(*value));
  }

  if (const gguf_value* a = find("general.alignment")) {
    if (!is_unsigned(a->type) && !is_signed(a->type))
      return malformed(alignment_pos, std::string("general.alignment has type ") +
                                          value_type_name(a->type) + ", expected an integer");
    const auto v = a->as_uint();
    if (!v || *v == 0 || !std::has_single_bit(*v) || *v > (uint64_t{1} << 30))
      return malformed(alignment_pos, "general.alignment " +
                                          (a->as_int() ? std::to_string(*a->as_int())
                                                       : std::to_string(v.value_or(0))) +
                                          " is not a nonzero power of two (up to 2^30)");
    alignment_ = static_cast<uint32_t>(*v);
  }

  // -- tensor infos --
  tensors_.reserve(*tensor_count);
  std::vector<uint64_t> offset_pos;
  offset_pos.reserve(*tensor_count);
  for (uint64_t i = 0; i < *tensor_count; ++i) {
    gguf_tensor_info t;
    const uint64_t name_pos = c.pos();
    auto name = c.read_string("tensor name");
    if (!name) return name.err();
    if (name->empty()) return malformed(name_pos, "empty tensor name");
    if (tensor_index_.count(*name)) return malformed(name_pos, "duplicate tensor name " + quoted(*name));
    t.name = std::move(*name);
    const std::string tq = "tensor " + quoted(t.name);

    const uint64_t dims_pos = c.pos();
    auto n_dims = c.read<uint32_t>("n_dims of " + tq);
    if (!n_dims) return n_dims.err();
    if (*n_dims == 0 || *n_dims > max_dims)
      return malformed(dims_pos, tq + " has n_dims " + std::to_string(*n_dims) + " (must be 1.." +
                                     std::to_string(max_dims) + ")");
    uint64_t n_elements = 1;
    for (uint32_t d = 0; d < *n_dims; ++d) {
      const uint64_t ne_pos = c.pos();
      auto ne = c.read<uint64_t>("ne[" + std::to_string(d) + "] of " + tq);
      if (!ne) return ne.err();
      if (*ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          __builtin_mul_overflow(n_elements, *ne, &n_elements) ||
          n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return malformed(ne_pos, tq + " element count overflows at ne[" + std::to_string(d) +
                                     "] = " + std::to_string(*ne));
      t.ne.push_back(*ne);
    }

    const uint64_t type_pos = c.pos();
    auto raw_type = c.read<uint32_t>("type of " + tq);
    if (!raw_type) return raw_type.err();
    const auto traits = type_traits(*raw_type);
    if (!traits) {
      const std::string_view type_name = ggml_type_name(*raw_type);
      if (is_fw_type_id(*raw_type))
        return make_error(errc::unsupported,
                          at(type_pos, tq + " has flywheel tensor type id " + std::to_string(*raw_type) +
                                           ", which this build does not know (a file from a newer flywheel quantizer?)"));
      if (type_name == "unknown")
        return malformed(type_pos, tq + " has unknown type id " + std::to_string(*raw_type));
      return make_error(errc::unsupported,
                        at(type_pos, tq + " has type " + std::string(type_name) +
                                         " which this build cannot run"));
    }
    t.type = traits->type;
    if (t.ne[0] % traits->block_size != 0)
      return malformed(dims_pos, tq + " has ne[0] = " + std::to_string(t.ne[0]) +
                                     ", not a multiple of the " + std::string(traits->name) +
                                     " block size " + std::to_string(traits->block_size));
    uint64_t header_bytes = 0;
    if (__builtin_mul_overflow(n_elements / traits->block_size, uint64_t{traits->type_size},
                               &t.n_bytes) ||
        __builtin_mul_overflow(t.ne[0] ? n_elements / t.ne[0] : 0, uint64_t{traits->row_header}, &header_bytes) ||
        __builtin_add_overflow(t.n_bytes, header_bytes, &t.n_bytes))
      return malformed(dims_pos, tq + " byte size overflows");

    const uint64_t off_pos = c.pos();
    auto offset = c.read<uint64_t>("data offset of " + tq);
    if (!offset) return offset.err();
    if (*offset % alignment_ != 0)
      return malformed(off_pos, tq + " data offset " + std::to_string(*offset) +
                                    " is misaligned (alignment " + std::to_string(alignment_) + ")");
    t.offset = *offset;
    offset_pos.push_back(off_pos);
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  // -- data section --
  const uint64_t data_start = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  const uint64_t data_size = data_start <= size_ ? size_ - data_start : 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    gguf_tensor_info& t = tensors_[i];
    if (t.offset > data_size || t.n_bytes > data_size - t.offset)
      return malformed(offset_pos[i],
                       "tensor " + quoted(t.name) + " data (offset " + std::to_string(t.offset) +
                           ", " + std::to_string(t.n_bytes) +
                           " bytes) extends past the end of the file (data section starts at byte " +
                           std::to_string(data_start) + " and holds " + std::to_string(data_size) +
                           " bytes)");
    t.data = t.n_bytes > 0 ? base_ + data_start + t.offset : nullptr;
  }
  return {};
}

}  // namespace fw
