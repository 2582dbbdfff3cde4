#include "runtime/kv/kv_storage.hpp"

#include <sys/mman.h>

#include <string>

namespace fw {
namespace {

// 2 MiB: the pool can sit on transparent huge pages. Attention reads a sequence's tiles from
// blocks far apart, one 4 KiB page per tile: with small pages every tile is a TLB miss.
constexpr size_t huge_page = size_t{2} << 20;

}  // namespace

expected<std::unique_ptr<host_kv_storage>> host_kv_storage::create(uint32_t n_blocks, size_t block_bytes) {
  const size_t bytes = size_t{n_blocks} * block_bytes;
  if (bytes == 0) return std::unique_ptr<host_kv_storage>(new host_kv_storage(nullptr, 0, n_blocks, block_bytes));
  // Anonymous memory: zero-filled and committed page by page as blocks are first written, so a
  // large pool costs resident memory only for the blocks in use (and nothing at start).
  const size_t length = (bytes + huge_page - 1) / huge_page * huge_page;
  void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return make_error(errc::out_of_memory, "cannot map " + std::to_string(bytes >> 20) + " MiB of KV cache");
  // A hint (THP in "madvise" mode needs it); failure only costs speed.
  if (bytes >= huge_page) (void)::madvise(p, length, MADV_HUGEPAGE);
  return std::unique_ptr<host_kv_storage>(new host_kv_storage(static_cast<std::byte*>(p), length, n_blocks, block_bytes));
}

host_kv_storage::~host_kv_storage() {
  if (base_) ::munmap(base_, length_);
}

}  // namespace fw
