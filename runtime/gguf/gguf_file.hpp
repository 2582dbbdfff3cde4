// gguf_file: a validated, read-only view of a GGUF (v2/v3) model file.
// Opening parses header, metadata and tensor infos from an mmap of the file and checks every
// count, length, offset and type against the file size, so a malformed file yields an error that
// names the problem and its byte offset instead of a crash. Tensor data stays mmapped (not copied)
// and lives as long as the gguf_file. Thread-safety: immutable after open; safe to share.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "runtime/base/expected.hpp"
#include "kernels/format/ggml_type.hpp"
#include "kernels/format/weight_view.hpp"

namespace fw {

/// GGUF metadata value types, as numbered by the format.
enum class gguf_type : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};

/// One metadata value. Scalars keep their widest form; arrays hold one vector per element kind.
struct gguf_value {
  gguf_type type = gguf_type::u8;
  gguf_type elem_type = gguf_type::u8;  ///< for arrays
  std::variant<uint64_t, int64_t, double, bool, std::string,
               std::vector<std::string>, std::vector<int64_t>, std::vector<double>>
      data;

  std::optional<uint64_t> as_uint() const;
  std::optional<int64_t> as_int() const;
  std::optional<double> as_float() const;
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;
  const std::vector<std::string>* as_string_array() const;
  const std::vector<int64_t>* as_int_array() const;   ///< any integer/bool array
  const std::vector<double>* as_float_array() const;  ///< f32/f64 arrays
  size_t array_size() const;
};

/// One tensor's description. Dimensions are ggml order: ne[0] is the contiguous (row) length.
struct gguf_tensor_info {
  std::string name;
  std::vector<uint64_t> ne;
  ggml_type type = ggml_type::f32;
  uint64_t offset = 0;  ///< relative to the data section
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  ///< points into the mapping

  uint64_t n_elements() const;
  uint64_t rows() const { return ne.empty() || ne[0] == 0 ? 0 : n_elements() / ne[0]; }
  /// The tensor as a matrix of rows() rows of ne[0] elements, in the file layout.
  cpu::weight_view view() const {
    return cpu::weight_view{type, data, static_cast<int64_t>(ne.empty() ? 0 : ne[0]), static_cast<int64_t>(rows()),
                            ne.empty() ? 0 : row_bytes(type_traits(type), ne[0])};
  }
};

class gguf_file {
 public:
  /// Maps and validates a file.
  static expected<std::shared_ptr<const gguf_file>> open(const std::string& path);
  /// Validates an in-memory image (copied); used by tests and tools.
  static expected<std::shared_ptr<const gguf_file>> from_bytes(std::span<const uint8_t> bytes,
                                                                std::string name = "<memory>");

  ~gguf_file();
  gguf_file(const gguf_file&) = delete;
  gguf_file& operator=(const gguf_file&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t file_size() const { return size_; }
  /// True when [p, p + n) lies inside this file's read-only mapping (not an owned copy).
  bool maps(const void* p, size_t n) const {
    const auto* b = static_cast<const uint8_t*>(p);
    return base_ && b >= base_ && b + n <= base_ + size_;
  }
  uint32_t alignment() const { return alignment_; }

  const gguf_value* find(std::string_view key) const;
  const std::vector<std::pair<std::string, gguf_value>>& metadata() const { return kv_; }

  // Typed getters: nullopt when the key is absent or of another kind.
  std::optional<uint64_t> get_uint(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;

  const std::vector<gguf_tensor_info>& tensors() const { return tensors_; }
  const gguf_tensor_info* find_tensor(std::string_view name) const;

 private:
  gguf_file() = default;
  expected<void> parse();

  std::string path_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false;
  std::vector<uint8_t> owned_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  std::vector<std::pair<std::string, gguf_value>> kv_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::vector<gguf_tensor_info> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace fw
