#include "runtime/device/cuda/cuda_kv_storage.hpp"

#include <cuda_runtime_api.h>

namespace fw {

expected<std::unique_ptr<cuda_kv_storage>> cuda_kv_storage::create(int device, uint32_t n_blocks, size_t block_bytes) {
  if (cudaSetDevice(device) != cudaSuccess) return make_error(errc::unsupported, "cuda:" + std::to_string(device) + " is not usable");
  void* p = nullptr;
  const size_t bytes = size_t{n_blocks} * block_bytes;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return make_error(errc::out_of_memory, "cuda:" + std::to_string(device) + " cannot hold a KV pool of " +
                                               std::to_string(bytes >> 20) + " MiB");
  }
  if (cudaMemset(p, 0, bytes) != cudaSuccess) {
    cudaFree(p);
    return make_error(errc::internal, "cuda:" + std::to_string(device) + ": clearing the KV pool failed");
  }
  return std::unique_ptr<cuda_kv_storage>(new cuda_kv_storage(static_cast<std::byte*>(p), n_blocks, block_bytes, device));
}

cuda_kv_storage::~cuda_kv_storage() {
  cudaSetDevice(device_);
  cudaFree(base_);
}

expected<void> cuda_kv_storage::copy(std::byte* dst, const std::byte* src, size_t n) const {
  // Unified addressing tells host from device pointers: one call for every direction.
  if (auto e = cudaSetDevice(device_); e != cudaSuccess)
    return make_error(errc::internal, std::string(where_) + ": " + cudaGetErrorString(e));
  if (auto e = cudaMemcpy(dst, src, n, cudaMemcpyDefault); e != cudaSuccess)
    return make_error(errc::internal, std::string(where_) + ": KV copy failed: " + cudaGetErrorString(e));
  // A device-to-device cudaMemcpy may return before it is done, and the backend's streams do
  // not wait for the default stream: the next forward must see the whole copy.
  if (auto e = cudaStreamSynchronize(cudaStreamLegacy); e != cudaSuccess)
    return make_error(errc::internal, std::string(where_) + ": KV copy failed: " + cudaGetErrorString(e));
  return {};
}

}  // namespace fw
