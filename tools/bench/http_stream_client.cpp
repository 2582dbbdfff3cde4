#include "tools/bench/http_stream_client.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace fw::cli {

namespace {

using clock_type = std::chrono::steady_clock;
using json = nlohmann::json;

double ms_since(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// A blocking connection whose reads wake every 250 ms (to check deadlines); -1 on failure.
int connect_to(const endpoint& ep) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(ep.host.c_str(), ep.port.c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    ::close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd >= 0) {
    timeval tv{0, 250000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

bool send_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

std::string request_text(const endpoint& ep, const std::string& method, const std::string& path,
                         const std::string& body, const std::string& api_key) {
  std::string r = method + " " + path + " HTTP/1.1\r\nHost: " + ep.host + ":" + ep.port +
                  "\r\nConnection: close\r\nAccept: text/event-stream\r\n";
  if (!api_key.empty()) r += "Authorization: Bearer " + api_key + "\r\n";
  if (!body.empty()) r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  return r + "\r\n" + body;
}

/// Reads a response until the server closes or the deadline; calls on_data with each piece of
/// the (de-chunked) body. Returns the status (0: no response); timed_out tells a deadline, or
/// that the reader set *stop (it stops reading there).
template <class OnData>
int read_response(int fd, clock_type::time_point deadline, bool& timed_out, OnData on_data, const bool* stop = nullptr) {
  std::string buf;
  char tmp[16384];
  timed_out = false;
  auto recv_some = [&](std::string& into) {
    for (;;) {
      if (stop && *stop) {
        timed_out = true;
        return false;
      }
      const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n > 0) {
        into.append(tmp, static_cast<size_t>(n));
        return true;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (clock_type::now() < deadline) continue;
        timed_out = true;
      }
      return false;
    }
  };
  size_t head_end;
  while ((head_end = buf.find("\r\n\r\n")) == std::string::npos)
    if (!recv_some(buf)) return 0;
  const std::string head = buf.substr(0, head_end);
  buf.erase(0, head_end + 4);
  int status = 0;
  if (std::sscanf(head.c_str(), "HTTP/1.%*d %d", &status) != 1) return 0;
  std::string lower = head;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.find("transfer-encoding: chunked") == std::string::npos) {
    if (!buf.empty()) on_data(buf);
    for (std::string piece; recv_some(piece); piece.clear()) on_data(piece);
    return status;
  }
  for (;;) {
    size_t eol;
    while ((eol = buf.find("\r\n")) == std::string::npos)
      if (!recv_some(buf)) return status;
    const size_t size = std::strtoul(buf.c_str(), nullptr, 16);
    buf.erase(0, eol + 2);
    if (size == 0) return status;
    while (buf.size() < size + 2)
      if (!recv_some(buf)) return status;
    on_data(buf.substr(0, size));
    buf.erase(0, size + 2);
  }
}

}  // namespace

expected<endpoint> parse_endpoint(const std::string& url, const std::string& flag) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    return make_error(errc::invalid_argument, flag + " " + url + ": expected http://HOST:PORT (no TLS)");
  std::string rest = url.substr(scheme.size());
  rest = rest.substr(0, rest.find('/'));
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size())
    return make_error(errc::invalid_argument, flag + " " + url + ": expected http://HOST:PORT");
  return endpoint{rest.substr(0, colon), rest.substr(colon + 1)};
}

namespace {
/// One request, the whole reply read (until the server closes or timeout_s).
http_reply http_call(const endpoint& ep, const char* method, const std::string& path, const std::string& body,
                     const std::string& api_key, double timeout_s) {
  http_reply r;
  const int fd = connect_to(ep);
  if (fd < 0) return r;
  const auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                std::chrono::duration<double>(timeout_s));
  bool timed_out = false;
  if (send_all(fd, request_text(ep, method, path, body, api_key)))
    r.status = read_response(fd, deadline, timed_out, [&](const std::string& p) { r.body += p; });
  ::close(fd);
  return r;
}
}  // namespace

http_reply http_get(const endpoint& ep, const std::string& path, const std::string& api_key, double timeout_s) {
  return http_call(ep, "GET", path, "", api_key, timeout_s);
}

http_reply http_post(const endpoint& ep, const std::string& path, const std::string& body, const std::string& api_key,
                     double timeout_s) {
  return http_call(ep, "POST", path, body, api_key, timeout_s);
}

stream_result stream_chat(const endpoint& ep, json body, const std::string& api_key, clock_type::time_point deadline,
                          uint32_t leave_after) {
  stream_result r;
  const auto start = clock_type::now();
  const int fd = connect_to(ep);
  if (fd < 0) return r;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  if (!send_all(fd, request_text(ep, "POST", "/v1/chat/completions", body.dump(), api_key))) {
    ::close(fd);
    return r;
  }
  std::string events, raw;
  clock_type::time_point last{};
  bool first = true, done = false, leave = false;
  r.status = read_response(fd, deadline, r.abandoned, [&](const std::string& piece) {
    if (raw.size() < 200) raw += piece.substr(0, 200 - raw.size());
    events += piece;
    size_t end;
    while ((end = events.find("\n\n")) != std::string::npos) {
      std::string ev = events.substr(0, end);
      events.erase(0, end + 2);
      if (!ev.empty() && ev.back() == '\r') ev.pop_back();
      if (ev.rfind("data: ", 0) != 0) continue;
      ev.erase(0, 6);
      if (ev == "[DONE]") {
        done = true;
        continue;
      }
      auto j = json::parse(ev, nullptr, false);
      if (j.is_discarded()) continue;
      if (j.contains("usage") && j["usage"].is_object()) r.tokens = j["usage"].value("completion_tokens", 0u);
      if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) {
        if (j.contains("error") && r.error.empty()) r.error = ev.substr(0, 300);  // an error event mid-stream
        continue;
      }
      const auto& c = j["choices"][0];
      if (c.contains("finish_reason") && c["finish_reason"].is_string()) r.finish_reason = c["finish_reason"].get<std::string>();
      if (!c.contains("delta") || !c["delta"].contains("content") || !c["delta"]["content"].is_string() ||
          c["delta"]["content"].get<std::string>().empty())
        continue;
      r.text += c["delta"]["content"].get<std::string>();
      const auto now = clock_type::now();
      if (first) r.ttft_ms = ms_since(start, now);
      else r.gaps_ms.push_back(ms_since(last, now));
      first = false;
      last = now;
      ++r.text_events;
      if (leave_after > 0 && r.text_events >= leave_after) leave = true;
    }
  }, &leave);
  ::close(fd);
  r.e2e_ms = ms_since(start, clock_type::now());
  if (r.tokens == 0) r.tokens = r.text_events;
  // An error event mid-stream (the server's headers were out) is a failure even though [DONE] follows.
  r.ok = r.status == 200 && done && !first && !r.abandoned && r.error.empty();
  if (r.status != 200) r.error = raw;
  return r;
}

}  // namespace fw::cli
