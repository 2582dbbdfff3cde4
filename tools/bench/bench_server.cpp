#include "tools/bench/bench_server.hpp"
#include "tools/bench/percentile.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace fw::cli {

namespace {

using clock_type = std::chrono::steady_clock;
using json = nlohmann::json;

double ms_since(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct endpoint {
  std::string host;
  std::string port;
};

expected<endpoint> parse_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    return make_error(errc::invalid_argument, "--server " + url + ": expected http://HOST:PORT (no TLS)");
  std::string rest = url.substr(scheme.size());
  rest = rest.substr(0, rest.find('/'));
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size())
    return make_error(errc::invalid_argument, "--server " + url + ": expected http://HOST:PORT");
  return endpoint{rest.substr(0, colon), rest.substr(colon + 1)};
}

/// A blocking connection; -1 on failure.
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
    timeval tv{120, 0};
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

/// Reads a response; calls on_data with each piece of the (de-chunked) body as it arrives.
/// Returns the status (0: no response).
template <class OnData>
int read_response(int fd, OnData on_data) {
  std::string buf;
  char tmp[16384];
  auto fill = [&]() {
    const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
    return true;
  };
  size_t head_end;
  while ((head_end = buf.find("\r\n\r\n")) == std::string::npos)
    if (!fill()) return 0;
  const std::string head = buf.substr(0, head_end);
  buf.erase(0, head_end + 4);
  int status = 0;
  if (std::sscanf(head.c_str(), "HTTP/1.%*d %d", &status) != 1) return 0;
  std::string lower = head;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.find("transfer-encoding: chunked") == std::string::npos) {
    on_data(buf);
    while (true) {
      const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n <= 0) break;
      on_data(std::string(tmp, static_cast<size_t>(n)));
    }
    return status;
  }
  for (;;) {
    size_t eol;
    while ((eol = buf.find("\r\n")) == std::string::npos)
      if (!fill()) return status;
    const size_t size = std::strtoul(buf.c_str(), nullptr, 16);
    buf.erase(0, eol + 2);
    if (size == 0) return status;
    while (buf.size() < size + 2)
      if (!fill()) return status;
    on_data(buf.substr(0, size));
    buf.erase(0, size + 2);
  }
}

struct one_result {
  int status = 0;
  bool ok = false;
  double ttft_ms = 0, e2e_ms = 0, client_wait_ms = 0;
  uint32_t tokens = 0;
  std::vector<double> gaps_ms;
};

one_result run_one(const endpoint& ep, const server_bench_options& o, const std::string& model,
                   const std::string& prompt, clock_type::time_point arrival) {
  one_result r;
  const auto start = clock_type::now();
  r.client_wait_ms = ms_since(arrival, start);
  const int fd = connect_to(ep);
  if (fd < 0) return r;
  json body = {{"model", model}, {"messages", json::array({{{"role", "user"}, {"content", prompt}}})},
               {"max_tokens", o.max_tokens}, {"temperature", 0.8}, {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (!send_all(fd, request_text(ep, "POST", "/v1/chat/completions", body.dump(), o.api_key))) {
    ::close(fd);
    return r;
  }
  std::string events;
  clock_type::time_point last{};
  bool first = true, done = false;
  uint32_t usage_tokens = 0;
  r.status = read_response(fd, [&](const std::string& piece) {
    events += piece;
    size_t end;
    while ((end = events.find("\n\n")) != std::string::npos) {
      std::string ev = events.substr(0, end);
      events.erase(0, end + 2);
      if (ev.rfind("data: ", 0) != 0) continue;
      ev.erase(0, 6);
      if (ev == "[DONE]") {
        done = true;
        continue;
      }
      auto j = json::parse(ev, nullptr, false);
      if (j.is_discarded()) continue;
      if (j.contains("usage") && j["usage"].is_object()) usage_tokens = j["usage"].value("completion_tokens", 0u);
      if (!j.contains("choices") || j["choices"].empty()) continue;
      const auto& c = j["choices"][0];
      if (!c.contains("delta") || !c["delta"].contains("content") || !c["delta"]["content"].is_string() ||
          c["delta"]["content"].get<std::string>().empty())
        continue;
      const auto now = clock_type::now();
      if (first) r.ttft_ms = ms_since(start, now);
      else r.gaps_ms.push_back(ms_since(last, now));
      first = false;
      last = now;
    }
  });
  ::close(fd);
  r.e2e_ms = ms_since(start, clock_type::now());
  r.tokens = usage_tokens;
  r.ok = r.status == 200 && done && !first;
  return r;
}

json percentiles(const std::vector<double>& v) {
  if (v.empty()) return json{{"p50", nullptr}, {"p95", nullptr}, {"p99", nullptr}, {"mean", nullptr}};
  double sum = 0;
  for (double x : v) sum += x;
  return json{{"p50", percentile(v, 0.50)}, {"p95", percentile(v, 0.95)}, {"p99", percentile(v, 0.99)},
              {"mean", sum / static_cast<double>(v.size())}};
}

}  // namespace

expected<json> run_server_bench(const server_bench_options& o) {
  auto ep = parse_url(o.url);
  if (!ep) return ep.err();
  if (!(o.rate > 0) || !(o.duration_s > 0))
    return make_error(errc::invalid_argument, "--rate and --duration must be above 0");
  std::string model = o.model;
  if (model.empty()) {
    const int fd = connect_to(*ep);
    if (fd < 0) return make_error(errc::io_error, "cannot connect to " + o.url);
    std::string body;
    int status = 0;
    if (send_all(fd, request_text(*ep, "GET", "/v1/models", "", o.api_key)))
      status = read_response(fd, [&](const std::string& p) { body += p; });
    ::close(fd);
    auto j = json::parse(body, nullptr, false);
    if (status != 200 || j.is_discarded() || !j.contains("data") || j["data"].empty())
      return make_error(errc::io_error, o.url + "/v1/models answered " + std::to_string(status) + ": " + body.substr(0, 200));
    model = j["data"][0].value("id", "");
  }

  std::mutex mutex;
  std::condition_variable slot_free;
  std::vector<one_result> results;
  std::atomic<int> open{0}, sent{0}, finished{0}, failed{0};
  std::vector<std::thread> threads;
  std::mt19937_64 rng(o.seed);
  std::exponential_distribution<double> gap(o.rate);
  const auto t0 = clock_type::now();
  const auto end = t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.duration_s));
  auto next = t0;
  auto last_progress = t0;
  auto progress = [&](bool final) {
    if (!o.progress) return;
    std::fprintf(stderr, "\rbench --server: %5.1f s  sent %d  done %d  errors %d  open %d   %s",
                 ms_since(t0, clock_type::now()) / 1000, sent.load(), finished.load(), failed.load(), open.load(),
                 final ? "\n" : "");
    std::fflush(stderr);
  };
  for (int i = 0;; ++i) {
    next += std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(gap(rng)));
    if (next >= end) break;
    while (clock_type::now() < next) {
      std::this_thread::sleep_until(std::min(next, clock_type::now() + std::chrono::milliseconds(200)));
      if (clock_type::now() - last_progress > std::chrono::seconds(1)) {
        last_progress = clock_type::now();
        progress(false);
      }
    }
    const auto arrival = next;
    if (o.concurrency > 0) {
      std::unique_lock<std::mutex> lock(mutex);
      slot_free.wait(lock, [&] { return open.load() < o.concurrency; });
    }
    ++open;
    ++sent;
    const std::string prompt =
        o.prompt.empty() ? "Request " + std::to_string(i) + ": write a few sentences about the number " +
                               std::to_string((i * 7919) % 1000) + "."
                         : o.prompt;
    threads.emplace_back([&, prompt, arrival] {
      one_result r = run_one(*ep, o, model, prompt, arrival);
      {
        std::lock_guard<std::mutex> lock(mutex);
        (r.ok ? finished : failed)++;
        results.push_back(std::move(r));
        --open;
      }
      slot_free.notify_one();
    });
  }
  while (open.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    progress(false);
  }
  for (auto& t : threads) t.join();
  const double wall_s = ms_since(t0, clock_type::now()) / 1000;
  progress(true);

  std::vector<double> ttft, tpot, itl, e2e, wait;
  std::map<std::string, int> errors;
  uint64_t tokens = 0;
  for (const auto& r : results) {
    wait.push_back(r.client_wait_ms);
    if (!r.ok) {
      errors[r.status ? std::to_string(r.status) : "no response"]++;
      continue;
    }
    ttft.push_back(r.ttft_ms);
    e2e.push_back(r.e2e_ms);
    tokens += r.tokens;
    itl.insert(itl.end(), r.gaps_ms.begin(), r.gaps_ms.end());
    if (r.tokens > 1) tpot.push_back((r.e2e_ms - r.ttft_ms) / static_cast<double>(r.tokens - 1));
  }
  json out = {{"server", o.url},
              {"model", model},
              {"rate", o.rate},
              {"duration_s", o.duration_s},
              {"concurrency_cap", o.concurrency},
              {"max_tokens", o.max_tokens},
              {"requests", results.size()},
              {"completed", ttft.size()},
              {"errors", errors},
              {"wall_s", wall_s},
              {"qps", static_cast<double>(ttft.size()) / wall_s},
              {"output_tok_s", static_cast<double>(tokens) / wall_s},
              {"ttft_ms", percentiles(ttft)},
              {"tpot_ms", percentiles(tpot)},
              {"itl_ms", percentiles(itl)},
              {"e2e_ms", percentiles(e2e)},
              {"client_wait_ms", percentiles(wait)}};
  return out;
}

}  // namespace fw::cli
