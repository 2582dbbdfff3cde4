#include "tools/server/http_server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>

#include <strings.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

namespace fw::server {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;

namespace {

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

std::string status_line(unsigned status) {
  const auto reason = http::obsolete_reason(static_cast<http::status>(status));
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason.data(), reason.size()) + "\r\n";
}

std::string hex(size_t n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%zx", n);
  return buf;
}

}  // namespace

class session;

struct http_server::impl : std::enable_shared_from_this<http_server::impl> {
  net::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  std::unique_ptr<net::ssl::context> tls;  ///< null: plain HTTP
  http_limits limits;
  request_handler handler;
  std::thread thread;
  std::atomic<size_t> connections{0};
  std::mutex sessions_mutex;
  std::vector<std::weak_ptr<session>> sessions;
  std::once_flag stopped;
  uint16_t bound_port = 0;
  std::mutex post_mutex;
  bool posts_closed = false;  ///< under post_mutex: set by stop(), later posts are dropped

  void accept();
  void close_all();
  /// Queues `f` on the I/O thread, or drops it once the server has stopped. A handler left in the
  /// stopped io_context would keep alive what it captures (a session, a reply channel), and those
  /// keep this object and so the io_context itself: a cycle nothing frees.
  template <class F>
  void post(F f) {
    {
      std::lock_guard<std::mutex> lock(post_mutex);
      if (!posts_closed) return net::post(ioc, std::move(f));
    }
    // Dropped: `f` is destroyed here, outside the lock (its captures may post again).
  }
  /// After stop: runs what is still queued (closed sessions return at once) until nothing is.
  void drain() {
    for (int i = 0; i < 1000; ++i) {
      ioc.restart();
      if (ioc.poll() == 0) return;
    }
  }
};

// One connection: read a request, hand it over, write the reply, repeat.
class session : public std::enable_shared_from_this<session> {
 public:
  session(tcp::socket socket, std::shared_ptr<http_server::impl> server)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), server_(std::move(server)) {
    if (server_->tls) tls_ = std::make_unique<net::ssl::stream<tcp::socket&>>(socket_, *server_->tls);
  }

  ~session() { server_->connections.fetch_sub(1); }

  /// HTTPS: the TLS handshake first (within the read timeout), then as plain HTTP. A client that
  /// speaks plain HTTP, or fails the handshake, is closed (nothing can be answered to it).
  void start(bool over_limit) {
    if (!tls_) return serve(over_limit);
    arm(server_->limits.read_timeout_s);
    tls_->async_handshake(net::ssl::stream_base::server, [self = shared_from_this(), over_limit](error_code ec) {
      self->timer_.cancel();
      if (ec || self->closed_) return self->close();
      self->serve(over_limit);
    });
  }

  void serve(bool over_limit) {
    if (over_limit) {
      keep_alive_ = false;
      write_whole({503, "application/json",
                   R"({"error":{"message":"too many open connections; retry later","type":"server_error","param":null,"code":"overloaded"}})",
                   {{"Retry-After", "1"}}});
      return;
    }
    read_request();
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    error_code ec;
    timer_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    client_gone();
  }

  // -- called through reply_channel, on the I/O thread --
  void respond(uint64_t generation, http_response r) {
    if (generation != generation_ || reply_ended_ || streaming_) return;
    reply_ended_ = true;
    write_whole(std::move(r));
  }
  void start_stream(uint64_t generation, unsigned status, const std::string& content_type) {
    if (generation != generation_ || reply_ended_ || streaming_) return;
    streaming_ = true;
    std::string head = status_line(status);
    head += "Content-Type: " + content_type + "\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
    head += keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    queue_write(std::move(head));
  }
  void stream(uint64_t generation, std::string data) {
    if (generation != generation_ || reply_ended_ || !streaming_ || data.empty()) return;
    queue_write(hex(data.size()) + "\r\n" + data + "\r\n");
  }
  void end_stream(uint64_t generation) {
    if (generation != generation_ || reply_ended_ || !streaming_) return;
    reply_ended_ = true;
    queue_write("0\r\n\r\n");
  }
  void on_disconnect(uint64_t generation, std::function<void()> f) {
    if (generation != generation_ || reply_ended_) return;
    if (closed_) {
      f();
      return;
    }
    on_gone_ = std::move(f);
  }

 private:
  // -- reading --
  void read_request() {
    ++generation_;
    reply_ended_ = false;
    streaming_ = false;
    on_gone_ = nullptr;
    continue_sent_ = false;
    request_started_ = buffer_.size() > 0;
    parser_.emplace();
    parser_->body_limit(server_->limits.max_body);
    parser_->header_limit(static_cast<std::uint32_t>(server_->limits.max_header));
    parser_->eager(true);
    arm(request_started_ ? server_->limits.read_timeout_s : server_->limits.idle_timeout_s);
    read_some();
  }

  void read_some() {
    if (buffer_.size() > 0 && parse()) return;
    const size_t room = std::min<size_t>(64 * 1024, buffer_.max_size() - buffer_.size());
    if (room == 0) return read_failed(http::error::header_limit);
    auto done = [self = shared_from_this()](error_code ec, size_t n) {
      self->buffer_.commit(n);
      self->on_read(ec, n);
    };
    if (tls_) tls_->async_read_some(buffer_.prepare(room), std::move(done));
    else socket_.async_read_some(buffer_.prepare(room), std::move(done));
  }

  void on_read(error_code ec, size_t n) {
    if (closed_) return;
    if (!request_started_ && n > 0) {
      request_started_ = true;  // the first byte: from now on the request must arrive in time
      arm(server_->limits.read_timeout_s);
    }
    if (ec) return read_failed(ec);
    if (!parse()) read_some();
  }

  /// Feeds the buffer to the parser; true when it finished (dispatched or failed).
  bool parse() {
    for (;;) {
      error_code ec;
      const size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more) return false;
      if (ec) {
        read_failed(ec);
        return true;
      }
      if (parser_->is_header_done() && !continue_sent_ && !parser_->is_done()) {
        continue_sent_ = true;
        const auto expect = parser_->get()[http::field::expect];
        if (expect.size() == 12 && strncasecmp(expect.data(), "100-continue", 12) == 0)
          queue_write("HTTP/1.1 100 Continue\r\n\r\n");
      }
      if (parser_->is_done()) {
        timer_.cancel();
        dispatch();
        return true;
      }
      if (used == 0 || buffer_.size() == 0) return false;
    }
  }

  void read_failed(error_code ec) {
    keep_alive_ = false;
    if (timed_out_) {
      timed_out_ = false;
      if (request_started_)
        return error_reply(408, "the request did not arrive within " + std::to_string(server_->limits.read_timeout_s) +
                                    " s (is Content-Length larger than the body?)");
      return close();  // idle keep-alive connection
    }
    if (ec == http::error::body_limit)
      return error_reply(413, "request body larger than " + std::to_string(server_->limits.max_body) + " bytes");
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow)
      return error_reply(431, "request headers too large");
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::operation_aborted ||
        ec == net::error::connection_reset || ec == http::error::partial_message || ec.category() == net::error::get_ssl_category() ||
        ec == net::ssl::error::stream_truncated)
      return close();
    return error_reply(400, "malformed HTTP request: " + ec.message());
  }

  void error_reply(unsigned status, const std::string& message) {
    reply_ended_ = true;
    std::string m;
    for (char c : message) {
      if (c == '"' || c == '\\') m += '\\';
      m += c;
    }
    write_whole({status, "application/json",
                 "{\"error\":{\"message\":\"" + m + "\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}",
                 {}});
  }

  void dispatch() {
    auto msg = parser_->release();
    keep_alive_ = msg.keep_alive();
    http_request req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    req.authorization = std::string(msg[http::field::authorization]);
    req.content_type = std::string(msg[http::field::content_type]);
    req.body = std::move(msg.body());
    watch_for_disconnect();
    try {
      server_->handler(std::move(req), make_channel());
    } catch (const std::exception& e) {
      // A bug in a handler: this request gets a 500 (not a dropped connection); the server goes on.
      std::fprintf(stderr, "flywheel: error: server: handler failed: %s\n", e.what());
      keep_alive_ = false;
      if (!reply_ended_ && !streaming_) {
        reply_ended_ = true;
        write_whole({500, "application/json",
                     R"({"error":{"message":"internal server error","type":"server_error","param":null,"code":"internal"}})",
                     {}});
      }
    }
  }

  // While the handler works, a readable socket with nothing to read means the client closed.
  void watch_for_disconnect() {
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this(), g = generation_](error_code ec) {
      if (self->closed_ || g != self->generation_ || self->reply_ended_) return;
      if (ec == net::error::operation_aborted) return;
      error_code aec;
      const size_t avail = self->socket_.available(aec);
      if (ec || aec || avail == 0) self->close();
      // Otherwise the client pipelined its next request: it is still there; stop watching.
    });
  }

  // -- writing --
  void write_whole(http_response r) {
    std::string out = status_line(r.status);
    out += "Content-Type: " + r.content_type + "\r\nContent-Length: " + std::to_string(r.body.size()) + "\r\n";
    for (const auto& [k, v] : r.headers) out += k + ": " + v + "\r\n";
    out += keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    out += r.body;
    reply_ended_ = true;
    queue_write(std::move(out));
  }

  void queue_write(std::string data) {
    if (closed_) return;
    out_.push_back(std::move(data));
    if (!writing_) write_next();
  }

  void write_next() {
    writing_ = true;
    arm(server_->limits.write_timeout_s);
    auto done = [self = shared_from_this()](error_code ec, size_t) { self->on_written(ec); };
    if (tls_) net::async_write(*tls_, net::buffer(out_.front()), std::move(done));
    else net::async_write(socket_, net::buffer(out_.front()), std::move(done));
  }

  void on_written(error_code ec) {
    writing_ = false;
    if (closed_) return;
    if (ec) return close();
    out_.pop_front();
    if (!out_.empty()) return write_next();
    timer_.cancel();
    if (!reply_ended_) return;  // a stream waits for its next chunk
    if (!keep_alive_) {
      error_code ignored;
      socket_.shutdown(tcp::socket::shutdown_send, ignored);
      closed_ = true;  // the reply is complete: nobody to tell
      socket_.close(ignored);
      return;
    }
    // The next request. A disconnect watch of the finished one may still be pending: cancel it.
    error_code ignored;
    socket_.cancel(ignored);
    net::post(socket_.get_executor(), [self = shared_from_this()] {
      if (!self->closed_) self->read_request();
    });
  }

  // -- deadline --
  void arm(double s) {
    timer_.expires_after(seconds(s));
    timer_.async_wait([self = shared_from_this(), g = ++deadline_id_](error_code ec) {
      if (ec || g != self->deadline_id_ || self->closed_) return;
      if (self->writing_) return self->close();  // a client that stopped reading
      self->timed_out_ = true;
      error_code ignored;
      self->socket_.cancel(ignored);  // the read completes with operation_aborted
    });
  }

  void client_gone() {
    if (reply_ended_ && !writing_) return;
    if (auto f = std::move(on_gone_)) {
      on_gone_ = nullptr;
      f();
    }
  }

  std::shared_ptr<reply_channel> make_channel();

  tcp::socket socket_;
  std::unique_ptr<net::ssl::stream<tcp::socket&>> tls_;  ///< over socket_ when the server is HTTPS
  net::steady_timer timer_;
  std::shared_ptr<http_server::impl> server_;
  boost::beast::flat_buffer buffer_{1 << 20};  // the most that is read ahead of the parser
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<std::string> out_;
  std::function<void()> on_gone_;
  uint64_t generation_ = 0;
  uint64_t deadline_id_ = 0;
  bool closed_ = false;
  bool writing_ = false;
  bool keep_alive_ = true;
  bool reply_ended_ = false;
  bool streaming_ = false;
  bool timed_out_ = false;
  bool request_started_ = false;
  bool continue_sent_ = false;
};

namespace {

// The handler's view of one request; posts every call to the I/O thread.
class session_channel final : public reply_channel {
 public:
  session_channel(std::weak_ptr<session> s, uint64_t generation, std::shared_ptr<http_server::impl> server)
      : session_(std::move(s)), generation_(generation), server_(std::move(server)) {}

  void respond(http_response r) override {
    run([r = std::move(r)](session& s, uint64_t g) mutable { s.respond(g, std::move(r)); });
  }
  void start_stream(unsigned status, std::string content_type) override {
    run([status, ct = std::move(content_type)](session& s, uint64_t g) { s.start_stream(g, status, ct); });
  }
  void stream(std::string data) override {
    run([d = std::move(data)](session& s, uint64_t g) mutable { s.stream(g, std::move(d)); });
  }
  void end_stream() override {
    run([](session& s, uint64_t g) { s.end_stream(g); });
  }
  void on_disconnect(std::function<void()> f) override {
    run([f = std::move(f)](session& s, uint64_t g) mutable { s.on_disconnect(g, std::move(f)); });
  }

 private:
  template <class F>
  void run(F f) {
    server_->post([w = session_, g = generation_, f = std::move(f)]() mutable {
      if (auto s = w.lock()) f(*s, g);
    });
  }
  std::weak_ptr<session> session_;
  uint64_t generation_;
  std::shared_ptr<http_server::impl> server_;  // keeps the I/O context alive for late callers
};

}  // namespace

std::shared_ptr<reply_channel> session::make_channel() {
  return std::make_shared<session_channel>(weak_from_this(), generation_, server_);
}

void http_server::impl::accept() {
  acceptor.async_accept([self = shared_from_this()](error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == net::error::operation_aborted || !self->acceptor.is_open()) return;
      return self->accept();  // e.g. too many open files: keep serving the open connections
    }
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    const size_t open = self->connections.fetch_add(1) + 1;
    auto s = std::make_shared<session>(std::move(socket), self);
    {
      std::lock_guard<std::mutex> lock(self->sessions_mutex);
      std::erase_if(self->sessions, [](const std::weak_ptr<session>& w) { return w.expired(); });
      self->sessions.push_back(s);
    }
    s->start(open > self->limits.max_connections);
    self->accept();
  });
}

void http_server::impl::close_all() {
  std::vector<std::shared_ptr<session>> open;
  {
    std::lock_guard<std::mutex> lock(sessions_mutex);
    for (auto& w : sessions)
      if (auto s = w.lock()) open.push_back(std::move(s));
    sessions.clear();
  }
  for (auto& s : open) s->close();
}

expected<std::unique_ptr<http_server>> http_server::start(const std::string& host, uint16_t port,
                                                          http_limits limits, request_handler handler) {
  error_code ec;
  const auto address = net::ip::make_address(host, ec);
  if (ec) return make_error(errc::invalid_argument, "server.host = \"" + host + "\" is not an IP address");
  auto s = std::unique_ptr<http_server>(new http_server());
  s->impl_ = std::make_shared<impl>();
  impl& i = *s->impl_;
  i.limits = limits;
  i.handler = std::move(handler);
  if (!limits.tls_cert.empty() || !limits.tls_key.empty()) {
    i.tls = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
    i.tls->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 | net::ssl::context::no_sslv3 |
                       net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use);
    i.tls->use_certificate_chain_file(limits.tls_cert, ec);
    if (ec) return make_error(errc::io_error, "server.tls_cert " + limits.tls_cert + ": " + ec.message());
    i.tls->use_private_key_file(limits.tls_key, net::ssl::context::pem, ec);
    if (ec) return make_error(errc::io_error, "server.tls_key " + limits.tls_key + ": " + ec.message());
    if (SSL_CTX_check_private_key(i.tls->native_handle()) != 1)
      return make_error(errc::invalid_argument, "server.tls_key " + limits.tls_key + " is not the key of server.tls_cert " +
                                                    limits.tls_cert);
  }
  const tcp::endpoint ep(address, port);
  auto fail = [&](const char* what) {
    return make_error(errc::io_error, std::string("cannot ") + what + " " + host + ":" + std::to_string(port) + ": " +
                                          ec.message());
  };
  i.acceptor.open(ep.protocol(), ec);
  if (ec) return fail("open");
  i.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  i.acceptor.bind(ep, ec);
  if (ec) return fail("bind");
  i.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen on");
  i.bound_port = i.acceptor.local_endpoint(ec).port();
  i.accept();
  i.thread = std::thread([p = s->impl_] {
    for (;;) {
      try {
        p->ioc.run();
        return;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "flywheel: error: server: %s (connection dropped, serving on)\n", e.what());
      }
    }
  });
  return s;
}

http_server::~http_server() { stop(); }

uint16_t http_server::port() const { return impl_->bound_port; }

void http_server::stop_accepting() {
  impl_->post([p = impl_] {
    error_code ignored;
    p->acceptor.close(ignored);
  });
}

void http_server::post(std::function<void()> f) { impl_->post(std::move(f)); }

size_t http_server::open_connections() const { return impl_->connections.load(); }

bool http_server::tls() const { return impl_->tls != nullptr; }

void http_server::stop() {
  if (!impl_) return;
  std::call_once(impl_->stopped, [this] {
    impl_->post([p = impl_] {
      error_code ignored;
      p->acceptor.close(ignored);
      p->close_all();
    });
    // The closed connections' handlers drain and run() returns; a straggler is cut off after 2 s.
    for (int i = 0; i < 200 && !impl_->ioc.stopped(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    {
      std::lock_guard<std::mutex> lock(impl_->post_mutex);
      impl_->posts_closed = true;
    }
    impl_->ioc.stop();
    if (impl_->thread.joinable()) impl_->thread.join();
    impl_->drain();
  });
}

}  // namespace fw::server
