// embed: the embedding rows of a batch's tokens, decoded from the table's format to floats.
// One block per row, a thread per 32-element chunk. Thread-safety: see cuda_kernels.hpp.
#include "kernels/cuda/cuda_kernels.hpp"

namespace fw::cuda {
namespace {

__global__ void embed_kernel(wfmt f, const uint8_t* __restrict__ table, int64_t row_bytes, int64_t width,
                             const int32_t* __restrict__ tokens, float* __restrict__ x) {
  const int64_t r = blockIdx.x;
  const uint8_t* row = table + static_cast<int64_t>(tokens[r]) * row_bytes;
  for (int64_t j = threadIdx.x; j < width / 32; j += blockDim.x) {
    float v[32];
    decode_chunk(f, row, j, v);
    for (int i = 0; i < 32; ++i) x[r * width + 32 * j + i] = v[i];
  }
}

}  // namespace

void embed(const weight_desc& table, const int32_t* tokens, int64_t rows, float* x, cudaStream_t s) {
  if (rows <= 0) return;
  embed_kernel<<<static_cast<unsigned>(rows), 128, 0, s>>>(table.fmt, table.data, table.row_bytes, table.k, tokens, x);
}

}  // namespace fw::cuda
