// cuda_kv_storage: a KV pool's blocks in one GPU's memory (one cudaMalloc, zero-filled). The
// CPU never touches these bytes: the CUDA backend's kernels read and write them, and copy()
// moves tiles between pools in any direction (prefix-cache copies on the device, host pools).
// Thread-safety: as kv_storage (each block is written by its handle's owner).
#pragma once

#include <string>

#include "runtime/kv/kv_storage.hpp"

namespace fw {

class cuda_kv_storage final : public kv_storage {
 public:
  /// n_blocks * block_bytes zeroed bytes on `device`; errc::out_of_memory when they do not fit.
  [[nodiscard]] static expected<std::unique_ptr<cuda_kv_storage>> create(int device, uint32_t n_blocks,
                                                                         size_t block_bytes);
  ~cuda_kv_storage() override;
  cuda_kv_storage(const cuda_kv_storage&) = delete;
  cuda_kv_storage& operator=(const cuda_kv_storage&) = delete;

  [[nodiscard]] std::byte* block(uint32_t b) override { return base_ + size_t{b} * block_bytes_; }
  [[nodiscard]] size_t block_bytes() const override { return block_bytes_; }
  [[nodiscard]] uint32_t n_blocks() const override { return n_blocks_; }
  [[nodiscard]] const char* where() const override { return where_.c_str(); }
  [[nodiscard]] bool host_addressable() const override { return false; }
  expected<void> copy(std::byte* dst, const std::byte* src, size_t n) const override;

  [[nodiscard]] std::byte* base() const { return base_; }

 private:
  cuda_kv_storage(std::byte* base, uint32_t n_blocks, size_t block_bytes, int device)
      : base_(base), n_blocks_(n_blocks), block_bytes_(block_bytes), device_(device),
        where_("cuda:" + std::to_string(device)) {}
  std::byte* base_;
  uint32_t n_blocks_;
  size_t block_bytes_;
  int device_;
  std::string where_;
};

}  // namespace fw
