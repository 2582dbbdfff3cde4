// http_server's shutdown: what handlers and late callers hand it must be freed once it stops (a
// handler left queued in a stopped I/O context kept a session or a reply channel, and so the
// server's own state and that context, alive: found by scripts/sanitize.sh --server as a leak).
#include "tools/server/http_server.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

namespace fw::server {
namespace {

int connect_loopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  return fd;
}

TEST(http_server_test, a_stopped_server_frees_the_channels_its_handlers_and_late_callers_hold) {
  std::promise<std::shared_ptr<reply_channel>> got;
  auto s = http_server::start("127.0.0.1", 0, http_limits{},
                              [&](http_request, std::shared_ptr<reply_channel> c) { got.set_value(std::move(c)); });
  ASSERT_TRUE(s.has_value()) << s.err().what();
  std::unique_ptr<http_server> server = std::move(*s);
  const int fd = connect_loopback(server->port());
  ASSERT_GE(fd, 0);
  const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}";
  ASSERT_EQ(::write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  auto f = got.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  std::shared_ptr<reply_channel> channel = f.get();
  std::weak_ptr<reply_channel> watch = channel;

  // A disconnect callback that holds its own channel (as a request's cancel does), set while the
  // server runs; then the server stops with the request unanswered.
  channel->on_disconnect([c = channel] {});
  channel->start_stream(200, "text/event-stream");
  server->stop();
  // Late callers: a token from the engine after the stop, a post that captures the channel.
  channel->stream("data: late\n\n");
  server->post([c = channel] {});
  channel.reset();
  server.reset();
  ::close(fd);
  EXPECT_TRUE(watch.expired()) << "the reply channel (and the server state it holds) outlived the server";
}

}  // namespace
}  // namespace fw::server
