// http_server: the HTTP/1.1 front end of `flywheel serve`, on Boost.Beast's parser and Asio.
//
// Why not cpp-httplib: it parks one pool thread on every open response stream, so a few hundred
// SSE clients exhaust the pool and /health and /metrics wait behind them. Here every connection is
// an asynchronous state machine on one I/O thread: an open stream costs a socket and a buffer, and
// a health probe is answered between two token writes.
//
// A connection reads one request at a time (keep-alive, pipelining tolerated) and hands it to the
// handler on the I/O thread. The handler answers through a reply_channel, from any thread, with one
// whole response or a chunked stream (SSE). Protections, each answered before the handler sees
// anything: a body over max_body gets 413, headers over 16 KiB 431, a malformed request line or
// header 400, a request not complete within read_timeout_s after its first byte 408 (a slow or
// lying client: Content-Length larger than what it sends), more than max_connections open 503.
// An idle keep-alive connection closes after idle_timeout_s; a client that stops reading for
// write_timeout_s is dropped. A client that goes away before its reply ends is reported once
// through the reply channel's disconnect callback (the handler cancels the request).
//
// Thread-safety: start/stop/stop_accepting/post/port/open_connections from any thread; the handler
// and disconnect callbacks run on the I/O thread; reply_channel methods from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/base/expected.hpp"

namespace fw::server {

struct http_request {
  std::string method;         ///< "GET", "POST", ...
  std::string target;         ///< path and query as sent
  std::string body;
  std::string authorization;  ///< the Authorization header, as sent
  std::string content_type;
};

struct http_response {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra headers (Retry-After, ...)
};

/// One request's way back to its client. After the client left, every call is a no-op.
class reply_channel {
 public:
  virtual ~reply_channel() = default;
  /// The whole response (Content-Length). Ends the reply.
  virtual void respond(http_response r) = 0;
  /// Status line and headers of a chunked response (e.g. text/event-stream).
  virtual void start_stream(unsigned status, std::string content_type) = 0;
  /// One chunk of a started stream (empty data is skipped).
  virtual void stream(std::string data) = 0;
  /// The last chunk. Ends the reply.
  virtual void end_stream() = 0;
  /// f runs once, on the I/O thread, if the client disconnects before the reply ended.
  virtual void on_disconnect(std::function<void()> f) = 0;
};

using request_handler = std::function<void(http_request, std::shared_ptr<reply_channel>)>;

struct http_limits {
  size_t max_body = 1 << 20;
  size_t max_header = 16 * 1024;
  double read_timeout_s = 10;
  double idle_timeout_s = 60;
  double write_timeout_s = 30;
  uint32_t max_connections = 1024;
  /// PEM files: both set, every connection is TLS (1.2 or later); both empty, plain HTTP.
  std::string tls_cert, tls_key;
};

class http_server {
 public:
  /// Binds host:port (port 0: any free one) and starts the I/O thread. errc::io_error when the
  /// address cannot be bound or limits' TLS files cannot be read, errc::invalid_argument when
  /// host is not an IP address or the key does not match the certificate.
  static expected<std::unique_ptr<http_server>> start(const std::string& host, uint16_t port,
                                                      http_limits limits, request_handler handler);
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  uint16_t port() const;
  /// Closes the listening socket: new connections are refused; open ones go on.
  void stop_accepting();
  /// Runs f on the I/O thread.
  void post(std::function<void()> f);
  size_t open_connections() const;
  bool tls() const;  ///< HTTPS
  /// Closes every connection and joins the I/O thread. Idempotent.
  void stop();

  struct impl;

 private:
  http_server() = default;
  std::shared_ptr<impl> impl_;
};

}  // namespace fw::server
