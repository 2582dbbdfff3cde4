// kv_storage: the memory behind one KV pool's blocks, apart from the book (kv_block_table) and
// from the layout math (kv_block_pool): `n_blocks` blocks of `block_bytes` each, addressed by
// block id. host_kv_storage is anonymous host memory (zero-filled, committed page by page as
// blocks are first written, on transparent huge pages when large); a device's memory is another
// implementation (the CUDA backend). Thread-safety: none beyond the memory's own; each block is
// written by the owner of the handle that holds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "runtime/base/expected.hpp"

namespace fw {

class kv_storage {
 public:
  virtual ~kv_storage() = default;
  /// The first byte of block b (host-addressable for host storage).
  [[nodiscard]] virtual std::byte* block(uint32_t b) = 0;
  [[nodiscard]] virtual size_t block_bytes() const = 0;
  [[nodiscard]] virtual uint32_t n_blocks() const = 0;
  /// "host", "cuda:0", ... for reports.
  [[nodiscard]] virtual const char* where() const = 0;
  /// True when block() is host memory the CPU may read and write; false for a device's memory,
  /// which only copy() and the device's kernels touch.
  [[nodiscard]] virtual bool host_addressable() const { return true; }
  /// Copies n bytes from src to dst, where each is in this storage or in host memory (a device
  /// storage copies in any direction). errc::internal when the device reports a failure.
  virtual expected<void> copy(std::byte* dst, const std::byte* src, size_t n) const {
    std::memcpy(dst, src, n);
    return {};
  }
};

class host_kv_storage final : public kv_storage {
 public:
  /// Maps n_blocks * block_bytes zeroed bytes; errc::out_of_memory when the mapping fails.
  [[nodiscard]] static expected<std::unique_ptr<host_kv_storage>> create(uint32_t n_blocks, size_t block_bytes);
  ~host_kv_storage() override;
  host_kv_storage(const host_kv_storage&) = delete;
  host_kv_storage& operator=(const host_kv_storage&) = delete;

  [[nodiscard]] std::byte* block(uint32_t b) override { return base_ + size_t{b} * block_bytes_; }
  [[nodiscard]] size_t block_bytes() const override { return block_bytes_; }
  [[nodiscard]] uint32_t n_blocks() const override { return n_blocks_; }
  [[nodiscard]] const char* where() const override { return "host"; }

 private:
  host_kv_storage(std::byte* base, size_t length, uint32_t n_blocks, size_t block_bytes)
      : base_(base), length_(length), n_blocks_(n_blocks), block_bytes_(block_bytes) {}
  std::byte* base_;
  size_t length_;
  uint32_t n_blocks_;
  size_t block_bytes_;
};

}  // namespace fw
