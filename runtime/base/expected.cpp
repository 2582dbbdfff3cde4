#include "runtime/base/expected.hpp"

#include <atomic>

#include "runtime/base/log.hpp"

namespace fw {

const char* to_string(errc code) {
  switch (code) {
    case errc::invalid_argument: return "invalid argument";
    case errc::malformed_file: return "malformed file";
    case errc::io_error: return "i/o error";
    case errc::unsupported: return "unsupported";
    case errc::out_of_memory: return "out of memory";
    case errc::context_overflow: return "context overflow";
    case errc::cancelled: return "cancelled";
    case errc::overloaded: return "overloaded";
    case errc::timed_out: return "timed out";
    case errc::worker_failed: return "worker failed";
    case errc::internal: return "internal error";
  }
  return "unknown error";
}

namespace {
std::atomic<uint64_t> ignored_{0};
}  // namespace

void ignore_error(const char* where, const expected<void>& result) {
  if (result) return;
  ignored_.fetch_add(1, std::memory_order_relaxed);
  log_warn(std::string(where) + ": ignored error: " + result.err().what());
}

uint64_t ignored_error_count() { return ignored_.load(std::memory_order_relaxed); }

}  // namespace fw
