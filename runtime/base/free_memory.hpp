// release_free_memory: hands the allocator's free memory back to the operating system (glibc's
// malloc_trim over every arena). glibc keeps what its arenas freed (one arena per allocating
// thread, up to 8 per core), so resident memory shows the high-water mark of a burst (e.g. every
// waiting request admitted at once after a worker's restart) long after the burst. Measuring
// after this call sees what is still allocated: `flywheel bench soak` judges growth so. A no-op
// where the C library is not glibc.
// Thread-safety: any thread.
#pragma once

namespace fw {

void release_free_memory();

/// Caps glibc's malloc arenas at 4 (unless MALLOC_ARENA_MAX is set): a long-running server whose
/// supervisor restarts workers on new threads otherwise spreads its allocations over up to 8
/// arenas per core, and their fragmentation keeps resident memory climbing although the memory in
/// use stays flat (measured by `flywheel bench soak`: +26% anonymous resident memory in 10
/// minutes with 157 worker restarts, allocated memory flat). Call before the first thread starts.
void limit_allocator_arenas();

}  // namespace fw
