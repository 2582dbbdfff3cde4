#include "tools/bench/bench_nodes.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>

#include "actors/engine.hpp"
#include "actors/prefill_node.hpp"
#include "actors/protocol/node_protocol.hpp"
#include "runtime/net/link_auth.hpp"

namespace fw::cli {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

std::vector<int32_t> random_prompt(std::mt19937_64& rng, int n, uint32_t n_vocab) {
  std::uniform_int_distribution<int32_t> tok(100, static_cast<int32_t>(n_vocab) - 100);
  std::vector<int32_t> p(static_cast<size_t>(n));
  for (auto& t : p) t = tok(rng);
  return p;
}

sampling_params greedy(int n) {
  sampling_params p;
  p.temperature = 0;
  p.max_tokens = n;
  p.ignore_eos = true;
  return p;
}

/// One loopback TCP connection for the raw copy: the baseline the node transfer is held to.
class raw_tcp {
 public:
  ~raw_tcp() {
    for (int fd : {w_, r_})
      if (fd >= 0) ::close(fd);
  }
  expected<void> open() {
    const int l = ::socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0) return make_error(errc::io_error, std::string("raw TCP: socket: ") + std::strerror(errno));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bool ok = ::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(l, 1) == 0 &&
              ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    if (ok) {
      w_ = ::socket(AF_INET, SOCK_STREAM, 0);
      ok = w_ >= 0 && ::connect(w_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    if (ok) {
      r_ = ::accept(l, nullptr, nullptr);
      ok = r_ >= 0;
    }
    const int e = errno;
    ::close(l);
    if (!ok) return make_error(errc::io_error, std::string("raw TCP over loopback: ") + std::strerror(e));
    const int one = 1;
    ::setsockopt(w_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // as CAF's sockets
    return {};
  }
  /// Seconds to move `bytes` from one end to the other in `chunk`-byte writes, received into
  /// one buffer (what the node link assembles the stream into).
  expected<double> copy(size_t bytes, size_t chunk) {
    src_.resize(bytes, std::byte{0x5a});
    dst_.resize(bytes);
    std::atomic<bool> failed{false};
    const auto t0 = clock_type::now();
    std::thread writer([&] {
      for (size_t at = 0; at < bytes;) {
        const ssize_t n = ::send(w_, src_.data() + at, std::min(chunk, bytes - at), MSG_NOSIGNAL);
        if (n <= 0) {
          failed = true;
          return;
        }
        at += static_cast<size_t>(n);
      }
    });
    size_t got = 0;
    while (got < bytes) {
      const ssize_t n = ::recv(r_, dst_.data() + got, bytes - got, 0);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    const double s = seconds_since(t0);
    writer.join();
    if (failed || got != bytes) return make_error(errc::io_error, "raw TCP copy over loopback failed");
    return s;
  }

 private:
  int w_ = -1, r_ = -1;
  std::vector<std::byte> src_, dst_;
};

/// The same bytes as kv_chunk messages between two actor systems over loopback, without
/// kv_codec: what CAF's network layer itself costs against the raw copy. The sink copies each
/// chunk into one buffer (as the raw copy receives into one) and answers a ping after the last.
class caf_copy {
 public:
  caf_copy() : a_(cfg_a_), b_(cfg_b_) {}
  expected<void> open() {
    auto dst = std::make_shared<std::vector<char>>();
    sink_ = b_.spawn([dst](caf::event_based_actor*) -> caf::behavior {
      return {
          [dst](actors::chunk_atom, actors::kv_chunk& c) {
            const size_t at = static_cast<size_t>(c.id);  // the byte offset
            if (dst->size() < at + c.bytes.size()) dst->resize(at + c.bytes.size());
            std::memcpy(dst->data() + at, c.bytes.data(), c.bytes.size());
          },
          [](actors::ping_atom) { return actors::ok_atom::value; },
      };
    });
    auto port = b_.middleman().publish(sink_, 0, "127.0.0.1", true);
    if (!port) return make_error(errc::io_error, "CAF copy: publish: " + b_.render(port.error()));
    auto remote = a_.middleman().remote_actor("127.0.0.1", *port);
    if (!remote) return make_error(errc::io_error, "CAF copy: connect: " + a_.render(remote.error()));
    remote_ = *remote;
    return {};
  }
  ~caf_copy() {
    caf::anon_send_exit(sink_, caf::exit_reason::user_shutdown);
  }
  /// Seconds to move `bytes` in `chunk`-byte messages and have the last one received.
  expected<double> copy(size_t bytes, size_t chunk) {
    caf::scoped_actor self{a_};
    // The messages are made before the clock starts, as the raw copy's buffer is.
    std::vector<actors::kv_chunk> msgs;
    for (size_t at = 0; at < bytes; at += chunk)
      msgs.push_back(actors::kv_chunk{at, 0, std::string(std::min(chunk, bytes - at), 'Z'), {}});
    const auto t0 = clock_type::now();
    for (auto& m : msgs) self->send(remote_, actors::chunk_atom::value, std::move(m));
    bool ok = false;
    self->request(remote_, std::chrono::seconds(60), actors::ping_atom::value)
        .receive([&](actors::ok_atom) { ok = true; }, [&](caf::error&) {});
    const double s = seconds_since(t0);
    if (!ok) return make_error(errc::io_error, "CAF copy over loopback failed");
    return s;
  }

 private:
  struct config : caf::actor_system_config {
    config() {
      load<caf::io::middleman>();
      actors::add_node_types(*this);
      set("scheduler.policy", caf::atom("sharing"));
      set("scheduler.max-threads", 1);
      set("logger.verbosity", caf::atom("quiet"));
    }
  };
  config cfg_a_, cfg_b_;
  caf::actor_system a_, b_;
  caf::actor sink_, remote_;
};

actors::peer_report peer_of(const actors::engine& e) {
  auto p = e.peers();
  return p.empty() ? actors::peer_report{} : p.front();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// A request's share of what the peer report counts.
struct peer_delta {
  uint64_t prefills = 0, bytes = 0, failovers = 0;
  double prefill_s = 0, transfer_s = 0, encode_s = 0, decode_s = 0;
};
peer_delta delta(const actors::peer_report& a, const actors::peer_report& b) {
  return {b.prefills - a.prefills, b.bytes - a.bytes,      b.failovers - a.failovers, b.prefill_s - a.prefill_s,
          b.transfer_s - a.transfer_s, b.encode_s - a.encode_s, b.decode_s - a.decode_s};
}

expected<std::unique_ptr<actors::engine>> start_engine(const runtime_parts& parts, engine_limits lim) {
  auto dev = parts.make_backend(parts.kv_tokens);
  if (!dev) return dev.err();
  return actors::engine::start(parts.m, std::move(*dev), std::move(lim));
}

}  // namespace

expected<nlohmann::json> run_nodes_bench(const runtime_parts& parts, const nodes_bench_options& o) {
  using nlohmann::json;
  const uint32_t n_vocab = parts.m->config().n_vocab;
  const int longest_gen = o.gen_tokens.empty() ? 0 : *std::max_element(o.gen_tokens.begin(), o.gen_tokens.end());
  const int longest_prompt =
      o.transfer_prompts.empty() ? 0 : *std::max_element(o.transfer_prompts.begin(), o.transfer_prompts.end());
  if (static_cast<uint32_t>(std::max(longest_prompt + 1, o.gen_prompt + longest_gen)) > parts.n_ctx)
    return make_error(errc::invalid_argument, "the nodes workload needs a context of " +
                                                  std::to_string(std::max(longest_prompt + 1, o.gen_prompt + longest_gen)) +
                                                  " tokens; this one has " + std::to_string(parts.n_ctx) +
                                                  " (model.ctx_size)");

  // The prefill node: its own device and actor system, published on a loopback port.
  auto pdev = parts.make_backend(parts.kv_tokens);
  if (!pdev) return pdev.err();
  actors::prefill_node_options po;
  po.prefill_chunk = parts.cfg.scheduler.prefill_chunk;
  // Authenticated and sealed as two nodes would be when [node] secret_file or FLYWHEEL_NODE_SECRET
  // gives a secret (whatever the config's role).
  auto secret = load_link_secret(parts.cfg.node.secret_file, std::getenv("FLYWHEEL_NODE_SECRET"));
  if (!secret) return secret.err();
  po.secret = *secret;
  // Over TLS when [node] tls_* names the files (whatever the role), as two such nodes would be.
  const link_tls tls{parts.cfg.node.tls_cert, parts.cfg.node.tls_key, parts.cfg.node.tls_ca};
  po.tls = tls;
  auto node = actors::prefill_node::start(parts.m, std::move(*pdev), parts.node_identity("prefill node"),
                                          node_address{"127.0.0.1", 0}, std::move(po));
  if (!node) return node.err();

  // The decode node: [node] as configured, its one peer that port; every prompt goes there.
  node_section ns = parts.cfg.node;
  ns.role = node_role::decode;
  ns.listen.clear();
  ns.peers = {"127.0.0.1:" + std::to_string((*node)->port())};
  ns.min_remote_tokens = 1;
  ns.deadline_ms = std::max<uint32_t>(ns.deadline_ms, 60000);  // a slow run is measured, not failed over
  engine_limits lim = parts.limits();
  lim.nodes = parts.node_limits_of(ns);
  lim.nodes.secret = *secret;
  lim.nodes.tls = tls;
  auto two = start_engine(parts, lim);
  if (!two) return two.err();
  auto& e = **two;
  const auto wait_from = clock_type::now();
  while (peer_of(e).state != "connected") {
    if (seconds_since(wait_from) > 20)
      return make_error(errc::timed_out, "the decode node did not connect to the prefill node: " + peer_of(e).reason);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  std::mt19937_64 rng(o.seed);
  raw_tcp tcp;
  if (auto ok = tcp.open(); !ok) return ok.err();
  caf_copy cafc;
  if (auto ok = cafc.open(); !ok) return ok.err();
  const size_t chunk = lim.nodes.chunk_bytes;
  json r;
  r["sealed"] = !secret->empty();
  r["tls"] = tls.enabled();
  r["chunk_bytes"] = chunk;
  r["wire"] = to_string(lim.kv_transfer);
  r["transfer"] = json::array();
  if (auto w = e.run(random_prompt(rng, 64, n_vocab), greedy(1)); !w.ok())  // warm-up
    return make_error(errc::internal, "nodes bench warm-up: " + w.final.error);

  for (int len : o.transfer_prompts) {
    std::vector<double> p2d, enc, dec, raw, cafs, prefill;
    uint64_t bytes = 0;
    for (int rep = 0; rep < o.reps; ++rep) {
      const auto before = peer_of(e);
      auto done = e.run(random_prompt(rng, len, n_vocab), greedy(1));
      const auto d = delta(before, peer_of(e));
      if (!done.ok()) return make_error(errc::internal, "nodes bench: a " + std::to_string(len) + "-token prompt failed: " + done.final.error);
      if (d.prefills != 1 || d.failovers != 0)
        return make_error(errc::internal, "nodes bench: a " + std::to_string(len) + "-token prompt was not prefilled by the peer");
      auto raw_s = tcp.copy(d.bytes, chunk);
      if (!raw_s) return raw_s.err();
      auto caf_s = cafc.copy(d.bytes, chunk);
      if (!caf_s) return caf_s.err();
      cafs.push_back(*caf_s);
      bytes = d.bytes;
      p2d.push_back(d.transfer_s);
      enc.push_back(d.encode_s);
      dec.push_back(d.decode_s);
      raw.push_back(*raw_s);
      prefill.push_back(d.prefill_s);
    }
    const double mb = static_cast<double>(bytes) / 1e6;
    json t;
    t["prompt_tokens"] = len;
    t["bytes"] = bytes;
    t["reps"] = o.reps;
    t["prefill_ms"] = 1e3 * median(prefill);
    t["p2d_ms"] = 1e3 * median(p2d);
    t["encode_ms"] = 1e3 * median(enc);
    t["decode_tail_ms"] = 1e3 * median(dec);
    t["raw_tcp_ms"] = 1e3 * median(raw);
    t["caf_copy_ms"] = 1e3 * median(cafs);
    t["p2d_mb_s"] = mb / median(p2d);
    t["raw_tcp_mb_s"] = mb / median(raw);
    t["caf_copy_mb_s"] = mb / median(cafs);
    t["caf_copy_vs_raw"] = median(raw) / median(cafs);
    t["p2d_vs_raw"] = median(raw) / median(p2d);
    r["transfer"].push_back(t);
  }

  // Generations: the same prompts on the two nodes and on one node (local prefill).
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < o.gen_tokens.size(); ++i) prompts.push_back(random_prompt(rng, o.gen_prompt, n_vocab));
  std::vector<actors::completed_request> remote;
  r["generation"] = json::array();
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto before = peer_of(e);
    const auto t0 = clock_type::now();
    auto done = e.run(prompts[i], greedy(o.gen_tokens[i]));
    const double wall = seconds_since(t0);
    const auto d = delta(before, peer_of(e));
    if (!done.ok()) return make_error(errc::internal, "nodes bench: a generation failed: " + done.final.error);
    json g;
    g["prompt_tokens"] = o.gen_prompt;
    g["gen_tokens"] = o.gen_tokens[i];
    g["remote_prefill"] = d.prefills == 1;
    g["two_nodes"] = {{"ttft_ms", done.final.ttft_ms}, {"e2e_ms", 1e3 * wall}, {"p2d_ms", 1e3 * d.transfer_s},
                      {"bytes", d.bytes}, {"transfer_share", d.transfer_s / wall}};
    r["generation"].push_back(g);
    remote.push_back(std::move(done));
  }
  e.shutdown();
  two->reset();
  (*node)->shutdown();

  engine_limits one_lim = parts.limits();
  one_lim.nodes = {};
  auto one = start_engine(parts, one_lim);
  if (!one) return one.err();
  (void)(*one)->run(random_prompt(rng, 64, n_vocab), greedy(1));  // warm-up
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto t0 = clock_type::now();
    auto done = (*one)->run(prompts[i], greedy(o.gen_tokens[i]));
    const double wall = seconds_since(t0);
    if (!done.ok()) return make_error(errc::internal, "nodes bench: a one-node generation failed: " + done.final.error);
    auto& g = r["generation"][i];
    g["one_node"] = {{"ttft_ms", done.final.ttft_ms}, {"e2e_ms", 1e3 * wall}};
    g["tokens_identical"] = done.tokens == remote[i].tokens;
  }
  (*one)->shutdown();
  return r;
}

void print_nodes_bench(const nlohmann::json& r) {
  std::printf("KV transfer between two nodes over loopback (kv_codec %s, %zu KiB chunks, %s, %s), medians. P->D: from the "
              "end of the prefill to the KV in the decode pool (encoding, CAF's network layer and decoding pipelined); "
              "CAF copy: the same bytes as kv_chunk messages between two actor systems, without kv_codec; raw TCP: "
              "one socket pair, the same bytes and chunks:\n\n",
              r["wire"].get<std::string>().c_str(), r["chunk_bytes"].get<size_t>() / 1024,
              r.value("sealed", false) ? "authenticated, every chunk sealed (HMAC-SHA256)" : "unauthenticated",
              r.value("tls", false) ? "P->D over TLS (CAF copy and raw TCP plain)" : "plain TCP");
  std::printf("| prompt | KV MB | prefill ms | P->D ms | encode ms (overlapped) | decode tail ms | CAF copy ms | raw TCP ms | "
              "P->D MB/s | CAF copy MB/s | raw MB/s | CAF copy vs raw | P->D vs raw |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& t : r["transfer"])
    std::printf("| %d | %.2f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f | %.0f | %.0f | %.0f%% | %.0f%% |\n",
                t["prompt_tokens"].get<int>(), t["bytes"].get<double>() / 1e6, t["prefill_ms"].get<double>(),
                t["p2d_ms"].get<double>(), t["encode_ms"].get<double>(), t["decode_tail_ms"].get<double>(),
                t["caf_copy_ms"].get<double>(), t["raw_tcp_ms"].get<double>(), t["p2d_mb_s"].get<double>(),
                t["caf_copy_mb_s"].get<double>(), t["raw_tcp_mb_s"].get<double>(),
                100 * t["caf_copy_vs_raw"].get<double>(), 100 * t["p2d_vs_raw"].get<double>());
  std::printf("\nShare of request time in transfer (P->D latency / end-to-end), and one node on the same requests:\n\n"
              "| prompt | generated | two nodes TTFT ms | E2E ms | P->D ms | transfer share | one node TTFT ms | E2E ms | "
              "same tokens |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& g : r["generation"]) {
    const auto& a = g["two_nodes"];
    const auto& b = g["one_node"];
    std::printf("| %d | %d | %.0f | %.0f | %.1f | %.2f%% | %.0f | %.0f | %s |\n", g["prompt_tokens"].get<int>(),
                g["gen_tokens"].get<int>(), a["ttft_ms"].get<double>(), a["e2e_ms"].get<double>(),
                a["p2d_ms"].get<double>(), 100 * a["transfer_share"].get<double>(), b["ttft_ms"].get<double>(),
                b["e2e_ms"].get<double>(), g["tokens_identical"].get<bool>() ? "yes" : "NO");
  }
}

}  // namespace fw::cli
