#include "runtime/expected.hpp"

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

}  // namespace fw
