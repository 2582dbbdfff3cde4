#include "kernels/cpu/stream_bench.hpp"

#include <emmintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace fw::cpu {
namespace {

constexpr size_t page = 4096;
constexpr size_t line = 64;

struct free_deleter {
  void operator()(void* p) const { std::free(p); }
};

// Sums 64-bit words of [p, p + n) (n a multiple of 64 bytes): four independent SSE2 accumulators,
// one cache line per iteration, so the loads rather than the adds set the pace.
uint64_t sum_lines(const uint8_t* p, size_t n) {
  __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += line) {
    const auto* v = reinterpret_cast<const __m128i*>(p + i);
    a0 = _mm_add_epi64(a0, _mm_load_si128(v));
    a1 = _mm_add_epi64(a1, _mm_load_si128(v + 1));
    a2 = _mm_add_epi64(a2, _mm_load_si128(v + 2));
    a3 = _mm_add_epi64(a3, _mm_load_si128(v + 3));
  }
  const __m128i s = _mm_add_epi64(_mm_add_epi64(a0, a1), _mm_add_epi64(a2, a3));
  uint64_t out[2];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), s);
  return out[0] + out[1];
}

}  // namespace

stream_result measure_read_bandwidth(thread_pool& pool, size_t bytes, int passes) {
  stream_result r;
  r.bytes = std::max(page, (bytes + page - 1) / page * page);
  r.threads = pool.size();
  r.passes = std::max(1, passes);
  std::unique_ptr<uint8_t, free_deleter> buf(static_cast<uint8_t*>(std::aligned_alloc(page, r.bytes)));
  if (!buf) return r;
  uint8_t* p = buf.get();
  const int64_t n_lines = static_cast<int64_t>(r.bytes / line);
  // First touch from the threads that will read (pages land near them on NUMA machines).
  pool.parallel_for(n_lines, 1024, [&](int64_t b, int64_t e, int) {
    std::memset(p + b * line, 1, static_cast<size_t>(e - b) * line);
  });
  std::vector<uint64_t> sink(pool.size(), 0);
  const auto read_all = [&] {
    // One contiguous slice per thread.
    pool.for_each(pool.size(), [&](int64_t t, int th) {
      const int64_t b = n_lines * t / pool.size(), e = n_lines * (t + 1) / pool.size();
      sink[th] += sum_lines(p + b * line, static_cast<size_t>(e - b) * line);
    });
  };
  read_all();  // warm-up (and TLB)
  double total = 0;
  for (int i = 0; i < r.passes; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    read_all();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double gb_s = static_cast<double>(r.bytes) / s / 1e9;
    r.best_gb_s = std::max(r.best_gb_s, gb_s);
    total += gb_s;
  }
  r.mean_gb_s = total / r.passes;
  // Keep the reads observable.
  uint64_t all = 0;
  for (uint64_t v : sink) all += v;
  asm volatile("" : : "r"(all));
  return r;
}

}  // namespace fw::cpu
