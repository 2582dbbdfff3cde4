// gguf_writer: builds GGUF v3 images in memory (metadata, tensor infos, aligned tensor data) and
// writes them to disk. Used by tools (tiny test models) and tests. It deliberately checks little:
// tests use it to build invalid files too (duplicate keys, odd shapes), which gguf_file rejects.
// Thread-safety: none; a plain value object owned by its user.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/base/expected.hpp"
#include "kernels/format/ggml_type.hpp"
#include "runtime/gguf/gguf_file.hpp"

namespace fw {

class gguf_writer {
 public:
  /// An alignment other than 32 is recorded as a general.alignment (u32) entry.
  explicit gguf_writer(uint32_t alignment = 32);

  // -- metadata, written in call order --

  void add_uint8(const std::string& key, uint8_t v);
  void add_int8(const std::string& key, int8_t v);
  void add_uint16(const std::string& key, uint16_t v);
  void add_int16(const std::string& key, int16_t v);
  void add_uint32(const std::string& key, uint32_t v);
  void add_int32(const std::string& key, int32_t v);
  void add_uint64(const std::string& key, uint64_t v);
  void add_int64(const std::string& key, int64_t v);
  void add_float32(const std::string& key, float v);
  void add_float64(const std::string& key, double v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  void add_string_array(const std::string& key, const std::vector<std::string>& v);
  void add_int32_array(const std::string& key, const std::vector<int32_t>& v);
  void add_float32_array(const std::string& key, const std::vector<float>& v);
  /// An array of any element type, given as count elements already encoded little-endian.
  void add_raw_array(const std::string& key, gguf_type elem_type, uint64_t count,
                     std::span<const uint8_t> encoded);

  /// A value read from another file, re-encoded with its own type (copying metadata).
  void add_value(const std::string& key, const gguf_value& v);

  // -- tensors, laid out in call order, each padded to the alignment --

  /// Same as add_tensor, taking the bytes without a copy.
  void add_tensor_owned(const std::string& name, std::vector<uint64_t> ne, ggml_type type, std::vector<uint8_t> data);

  /// ne in ggml order (ne[0] is the row length); data is the tensor's bytes, copied.
  void add_tensor(const std::string& name, std::vector<uint64_t> ne, ggml_type type,
                  std::span<const uint8_t> data);
  /// Same with a raw type id, which may be one this build cannot compute with (for tests).
  void add_tensor_raw(const std::string& name, std::vector<uint64_t> ne, uint32_t raw_type,
                      std::span<const uint8_t> data);

  // -- output --

  [[nodiscard]] std::vector<uint8_t> bytes() const;
  [[nodiscard]] expected<void> write(const std::string& path) const;

  uint32_t alignment() const { return alignment_; }

 private:
  struct tensor {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t raw_type;
    std::vector<uint8_t> data;
  };

  void begin_kv(const std::string& key, gguf_type type);

  uint32_t alignment_;
  uint64_t kv_count_ = 0;
  std::vector<uint8_t> kv_bytes_;  ///< encoded key/value pairs
  std::vector<tensor> tensors_;
};

}  // namespace fw
