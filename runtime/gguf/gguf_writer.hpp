// gguf_writer: builds GGUF v3 images (metadata, tensor infos, aligned tensor data) in memory or
// straight into a file. Used by the quantizer, tools (tiny test models) and tests. It deliberately
// checks little of the content: tests use it to build invalid files too (duplicate keys, odd
// shapes), which gguf_file rejects.
//
// Streaming (the quantizer's output, which may be larger than memory): declare every tensor with
// its type and shape (the size follows), call stream_to(path) and begin_data() (the header and the
// tensors given with their bytes go to the file), then fill_tensor() each declared tensor in any
// order as its bytes are made (written at its offset, then dropped), then finish(). Without
// stream_to the same calls keep the bytes in memory for bytes() / write().
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

  /// A tensor whose bytes come later, through fill_tensor (its size follows from type and ne).
  void declare_tensor(const std::string& name, std::vector<uint64_t> ne, ggml_type type);

  // -- streaming --

  /// Makes begin_data() write the image to `path` (created or truncated) instead of memory.
  void stream_to(std::string path) { stream_path_ = std::move(path); }
  /// Ends the metadata and the tensor list (adding either later is refused by finish()). When
  /// streaming, writes the header and the tensors given with their bytes, and sizes the file.
  [[nodiscard]] expected<void> begin_data();
  /// The bytes of a declared tensor, exactly its size; refused for an unknown, undeclared or
  /// already filled name. When streaming they are written at the tensor's offset and dropped.
  [[nodiscard]] expected<void> fill_tensor(const std::string& name, std::vector<uint8_t> data);
  /// Every declared tensor filled? When streaming, also closes the file.
  [[nodiscard]] expected<void> finish();

  // -- output (in memory; declared tensors not yet filled read as zeros) --

  [[nodiscard]] std::vector<uint8_t> bytes() const;
  /// Writes the image tensor by tensor (no second copy in memory); refused when streaming.
  [[nodiscard]] expected<void> write(const std::string& path) const;

  ~gguf_writer();
  gguf_writer(gguf_writer&& other) noexcept;  ///< the file, if open, moves with it
  gguf_writer& operator=(gguf_writer&&) = delete;

  uint32_t alignment() const { return alignment_; }

 private:
  struct tensor {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t raw_type;
    std::vector<uint8_t> data;  ///< empty once streamed, or until a declared tensor is filled
    uint64_t size = 0;          ///< its bytes (declared, or data.size())
    bool declared = false, filled = false;
  };

  void begin_kv(const std::string& key, gguf_type type);
  void push(tensor t);
  /// The header, tensor infos and padding up to the data section.
  std::vector<uint8_t> header() const;
  expected<void> put_at(uint64_t offset, const std::vector<uint8_t>& data);

  uint32_t alignment_;
  uint64_t kv_count_ = 0;
  std::vector<uint8_t> kv_bytes_;  ///< encoded key/value pairs
  std::vector<tensor> tensors_;
  std::vector<uint64_t> offsets_;  ///< per tensor, from the data section (set by begin_data)
  std::string stream_path_;
  int fd_ = -1;
  uint64_t data_start_ = 0;
  bool begun_ = false, late_ = false;  ///< late_: metadata or a tensor added after begin_data
};

}  // namespace fw
