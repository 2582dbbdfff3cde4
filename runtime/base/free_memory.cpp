#include "runtime/base/free_memory.hpp"

#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace fw {

void release_free_memory() {
#if defined(__GLIBC__)
  (void)malloc_trim(0);
#endif
}

void limit_allocator_arenas() {
#if defined(__GLIBC__)
  if (!std::getenv("MALLOC_ARENA_MAX")) (void)mallopt(M_ARENA_MAX, 4);
#endif
}

}  // namespace fw
