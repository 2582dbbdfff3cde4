// flywheel serve: the OpenAI-compatible HTTP server (tools/server/) on the actor runtime.
// Builds the engine through the composition root, binds [server] host:port (127.0.0.1:8080 by
// default), prints "flywheel serve: listening on http://HOST:PORT" on stderr and serves until
// SIGTERM or SIGINT. Then: new requests get 503, in-flight ones get server.shutdown_timeout_s to
// finish, the rest are cancelled, and the process exits 0. A second signal skips the wait.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "actors/engine.hpp"
#include "actors/prefill_node.hpp"
#include "runtime/base/free_memory.hpp"
#include "runtime/config/node_address.hpp"
#include "runtime/setup/lever_summary.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "tools/flywheel/arg_parser.hpp"
#include "tools/flywheel/commands.hpp"
#include "tools/flywheel/model_session.hpp"
#include "tools/server/server_stack.hpp"

namespace fw::cli {
namespace {

/// Waits up to `seconds` for a signal in `set`; true when one came.
bool wait_signal(const sigset_t& set, double seconds) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(seconds);
  ts.tv_nsec = static_cast<long>((seconds - static_cast<double>(ts.tv_sec)) * 1e9);
  return sigtimedwait(&set, nullptr, &ts) > 0;
}

/// [node] role prefill: no HTTP; the prefill service on node.listen until a signal.
int serve_prefill_node(config cfg, const sigset_t& stop_signals) {
  const auto listen = parse_node_address(cfg.node.listen, true);
  if (!listen) {
    std::fprintf(stderr, "serve: node.listen: %s\n", listen.err().message.c_str());
    return 2;
  }
  const uint32_t chunk = cfg.scheduler.prefill_chunk;
  build_options bo;
  bo.build_draft = false;  // a prefill node proposes no tokens
  auto parts = build_runtime(std::move(cfg), bo);
  if (!parts) {
    std::fprintf(stderr, "serve: %s\n", parts.err().what().c_str());
    return 1;
  }
  std::fprintf(stderr, "serve: %s\n", parts->device()->summary().c_str());
  auto identity = parts->node_identity("prefill node");
  const std::string fingerprint = identity.model_fingerprint;
  actors::prefill_node_options po;
  po.prefill_chunk = chunk;
  po.secret = parts->node_secret;
  po.tls = parts->node_tls;
  const bool authenticated = !po.secret.empty();
  auto node = actors::prefill_node::start(parts->m, parts->devices.take(device_role::decode), std::move(identity), *listen, std::move(po));
  if (!node) {
    std::fprintf(stderr, "serve: %s\n", node.err().what().c_str());
    return 1;
  }
  std::fprintf(stderr, "flywheel serve: prefill node listening on %s:%u (node protocol %u, model %s, %s, %s)\n",
               listen->host.c_str(), static_cast<unsigned>((*node)->port()), actors::node_protocol_version,
               fingerprint.c_str(), authenticated ? "peers must prove the shared secret" : "unauthenticated",
               parts->node_tls.enabled() ? "TLS: peers must present a certificate tls_ca verifies" : "plain TCP");
  std::fflush(stderr);
  while (!wait_signal(stop_signals, 3600)) {
  }
  const auto& c = (*node)->counters();
  std::fprintf(stderr,
               "serve: prefill node stopping after %llu prefills (%llu failed, %llu handshakes refused, %llu forged jobs "
               "refused)\n",
               static_cast<unsigned long long>(c.prefills.load()), static_cast<unsigned long long>(c.failed.load()),
               static_cast<unsigned long long>(c.refused.load()), static_cast<unsigned long long>(c.forged.load()));
  (*node)->shutdown();
  return 0;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  limit_allocator_arenas();  // a long-running server: resident memory that follows what is in use
  arg_parser args("serve");
  model_session::declare_flags(args);
  args.option("host", "address to bind (overrides server.host; built-in: 127.0.0.1)")
      .option("port", "TCP port, 0 = any free one (overrides server.port; built-in: 8080)")
      .option("api-key", "require \"Authorization: Bearer KEY\" on /v1/* (overrides server.api_key and $FLYWHEEL_API_KEY)")
      .option("model-name", "the model id clients use (overrides server.model_name; built-in: the file's stem)")
      .option("role", "both | prefill | decode: this process among several (overrides node.role; built-in: both)")
      .option("listen", "role prefill: HOST:PORT to publish the prefill service on (overrides node.listen)")
      .option("peer", "role decode: the prefill node(s), HOST:PORT[,HOST:PORT...] (overrides node.peers)");
  if (auto code = args.parse_or_exit_code(argc, argv)) return *code;
  auto cfg = model_session::load_config(args);
  if (!cfg) {
    std::fprintf(stderr, "serve: %s\n", cfg.err().message.c_str());
    return 2;
  }
  for (const auto& [flag, key] : {std::pair{"host", "server.host"}, std::pair{"port", "server.port"},
                                  std::pair{"api-key", "server.api_key"}, std::pair{"model-name", "server.model_name"}}) {
    if (!args.has(flag)) continue;
    if (auto ok = cfg->set(key, args.str(flag)); !ok) {
      std::fprintf(stderr, "serve: --%s: %s\n", flag, ok.err().message.c_str());
      return 2;
    }
  }
  // One validation for the three: a role and its addresses only make sense together.
  std::vector<std::pair<std::string, std::string>> node_keys;
  if (args.has("role")) node_keys.emplace_back("node.role", args.str("role"));
  if (args.has("listen")) node_keys.emplace_back("node.listen", args.str("listen"));
  if (args.has("peer")) {  // a comma-separated list, as a TOML array
    std::string list = "[";
    const std::string text = args.str("peer");
    for (size_t at = 0; at <= text.size();) {
      const size_t comma = std::min(text.find(',', at), text.size());
      list += (list.size() > 1 ? ", \"" : "\"") + text.substr(at, comma - at) + "\"";
      at = comma + 1;
    }
    node_keys.emplace_back("node.peers", list + "]");
  }
  if (auto ok = cfg->set_all(node_keys); !ok) {
    std::fprintf(stderr, "serve: --role/--listen/--peer: %s\n", ok.err().message.c_str());
    return 2;
  }
  if (auto ok = check_devices(*cfg); !ok) {
    std::fprintf(stderr, "serve: %s\n", ok.err().message.c_str());
    return 2;
  }

  // Every thread started from here on inherits the mask: only this thread takes the signals.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client that vanished mid-write is an error code, not a signal

  const server_section srv = cfg->server;
  // (Checked before the model loads; the server stack reads the same section.)
  if (auto ok = sampling_params::from_section(cfg->sampling).validate(); !ok) {
    std::fprintf(stderr, "serve: [sampling]: %s\n", ok.err().message.c_str());
    return 2;
  }
  if (cfg->node.role == node_role::prefill) return serve_prefill_node(std::move(*cfg), stop_signals);
  auto parts = build_runtime(std::move(*cfg));
  if (!parts) {
    std::fprintf(stderr, "serve: %s\n", parts.err().what().c_str());
    return 1;
  }
  for (const auto& d : parts->devices.all())
    std::fprintf(stderr, "serve: %s (%s): %s\n", d.name.c_str(), std::string(enum_name(device_role_names, d.role)).c_str(),
                 d.be->summary().c_str());
  auto engine = actors::engine::start(*parts);
  if (!engine) {
    std::fprintf(stderr, "serve: %s\n", engine.err().what().c_str());
    return 1;
  }

  auto stack = server::server_stack::start(**engine, *parts, srv.host, static_cast<uint16_t>(srv.port));
  if (!stack) {
    std::fprintf(stderr, "serve: %s\n", stack.err().what().c_str());
    (*engine)->shutdown();
    return 1;
  }
  auto& http = (*stack)->http;
  auto& service = *(*stack)->service;
  const auto& so = (*stack)->options;
  std::fprintf(stderr, "flywheel serve: listening on %s://%s:%u (model \"%s\", context %u tokens%s)\n",
               http->tls() ? "https" : "http", srv.host.c_str(), static_cast<unsigned>(http->port()), so.model_name.c_str(), so.n_ctx,
               so.api_key.empty() ? "" : ", API key required");
  std::fprintf(stderr, "flywheel serve: %s\n", lever_summary(*parts).c_str());
  std::fflush(stderr);

  while (!wait_signal(stop_signals, 3600)) {
  }
  std::fprintf(stderr, "serve: shutting down: %zu request(s) in flight get up to %g s\n", service.in_flight(),
               srv.shutdown_timeout_s);
  service.begin_drain();
  http->stop_accepting();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(srv.shutdown_timeout_s);
  while (service.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    if (wait_signal(stop_signals, 0.05)) break;  // a second signal: stop waiting
  }
  if (service.in_flight() > 0) {
    std::fprintf(stderr, "serve: cancelling %zu request(s)\n", service.in_flight());
    service.cancel_all();
    for (int i = 0; i < 100 && service.in_flight() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the last replies leave the socket buffers
  http->stop();
  (*engine)->shutdown();
  std::fprintf(stderr, "serve: stopped\n");
  return 0;
}

}  // namespace fw::cli
