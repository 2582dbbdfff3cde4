// expected<T>: a value or an fw::error. Errors at library boundaries are values, not exceptions.
// Thread-safety: plain value type.
#pragma once

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace fw {

/// Documented error kinds returned across runtime boundaries.
enum class errc {
  invalid_argument,  ///< a caller passed a bad value (CLI flag, config value)
  malformed_file,    ///< a file's content is inconsistent (GGUF, TOML)
  io_error,          ///< open/read/mmap failed
  unsupported,       ///< valid input that this build cannot handle (tensor type, template)
  out_of_memory,     ///< a pool or allocator is exhausted
  context_overflow,  ///< prompt + generation do not fit the context window
  cancelled,         ///< the request was cancelled
  overloaded,        ///< a queue is full; retry later
  timed_out,         ///< a deadline passed
  worker_failed,     ///< the actor or device running the request failed
  internal,          ///< a broken invariant; a bug
};

const char* to_string(errc code);

/// An error: a kind plus a human-readable message that names the problem.
struct error {
  errc code = errc::internal;
  std::string message;

  [[nodiscard]] std::string what() const { return std::string(to_string(code)) + ": " + message; }
};

inline error make_error(errc code, std::string message) { return error{code, std::move(message)}; }

/// A value of type T or an error.
template <class T>
class [[nodiscard]] expected {
 public:
  expected(T value) : v_(std::move(value)) {}          // NOLINT(implicit)
  expected(error err) : v_(std::move(err)) {}          // NOLINT(implicit)

  [[nodiscard]] bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { assert(has_value()); return std::get<0>(v_); }
  const T& value() const& { assert(has_value()); return std::get<0>(v_); }
  T&& value() && { assert(has_value()); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const error& err() const { assert(!has_value()); return std::get<1>(v_); }

 private:
  std::variant<T, error> v_;
};

/// expected<void>: success or an error.
template <>
class [[nodiscard]] expected<void> {
 public:
  expected() = default;
  expected(error err) : err_(std::move(err)) {}  // NOLINT(implicit)
  [[nodiscard]] bool has_value() const { return !err_.has_value(); }
  explicit operator bool() const { return has_value(); }
  const error& err() const { assert(err_.has_value()); return *err_; }

 private:
  std::optional<error> err_;
};

/// Records an error that the caller deliberately does not act on (a release on a cleanup path):
/// it is counted (ignored_error_count(), exported as flywheel:ignored_errors_total) and logged
/// as a warning naming `where`. A success is not counted.
void ignore_error(const char* where, const expected<void>& result);
/// Errors passed to ignore_error() so far, process-wide.
[[nodiscard]] uint64_t ignored_error_count();

}  // namespace fw
