// node_link_fixture: two nodes in one test process (two CAF actor systems over loopback TCP, a
// tiny Q8_0 model): a prefill node on a port, a decode engine whose peers are ports, a one-node
// reference run, and the helpers the node link tests share (tests/actors/node_link_test.cpp,
// node_tls_test.cpp).
// Thread-safety: the test's thread.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include "actors/engine.hpp"
#include "actors/prefill_node.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/setup/device_identity_of.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/sampling_presets.hpp"
#include "tests/support/test_models.hpp"

namespace fw::actors::test_support {

using namespace std::chrono_literals;

class node_link_fixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tiny_model_spec spec;
    spec.weight_type = ggml_type::q8_0;
    spec.seed = 47;
    model_ = test::load_tiny(spec, "nodes_q8_0");
  }
  static void TearDownTestSuite() { model_.reset(); }

  static std::unique_ptr<backend> device() { return test::tiny_device(*model_, 4096, 1); }

  static device_identity identity(const std::string& name, backend& b) {
    return device_identity_of(name, b, model_fingerprint(model_->file()));
  }

  static std::unique_ptr<prefill_node> start_node(uint16_t port = 0, prefill_node_options o = {},
                                                  std::function<void(device_identity&)> amend = {}) {
    auto dev = device();
    auto id = identity("prefill node cpu:0", *dev);
    if (amend) amend(id);
    o.prefill_chunk = 16;
    auto n = prefill_node::start(model_, std::move(dev), id, node_address{"127.0.0.1", port}, std::move(o));
    EXPECT_TRUE(n) << (n ? "" : n.err().what());
    return n ? std::move(*n) : nullptr;
  }

  /// A decode node whose peers are these ports; none: a one-node engine (the reference).
  static std::unique_ptr<engine> start_engine(std::vector<uint16_t> ports, double deadline_s = 3.0,
                                              std::shared_ptr<const engine_faults> faults = nullptr,
                                              std::string secret = {}, uint32_t min_remote_tokens = 1,
                                              link_tls tls = {}, uint32_t prefix_cache_blocks = 0) {
    engine_limits lim;
    lim.prefix_cache_blocks = prefix_cache_blocks;
    lim.n_ctx = 256;
    lim.prefill_chunk = 16;
    for (uint16_t p : ports) lim.nodes.peers.push_back(node_address{"127.0.0.1", p});
    lim.nodes.heartbeat_s = 0.05;
    // Above a busy CI machine's pauses: a missed heartbeat fails the peer's prompts over (exact counts change).
    lim.nodes.heartbeat_timeout_s = 2.5;
    lim.nodes.reconnect_s = 0.02;
    lim.nodes.reconnect_max_s = 0.2;
    lim.nodes.deadline_s = deadline_s;
    lim.nodes.chunk_bytes = 4096;  // several chunks per stream
    auto dev = device();
    lim.nodes.self = identity("decode node cpu:0", *dev);
    lim.nodes.secret = std::move(secret);
    lim.nodes.min_remote_tokens = min_remote_tokens;
    lim.nodes.tls = std::move(tls);
    engine_options o;
    o.faults = std::move(faults);
    return test::start_engine(model_, std::move(dev), lim, std::move(o));
  }

  static std::vector<int32_t> prompt_of(size_t i) {
    std::vector<int32_t> p;
    for (size_t j = 0; j < 9 + i * 13; ++j) p.push_back(static_cast<int32_t>(3 + (i * 37 + j * 11) % 250));
    return p;
  }
  static std::vector<std::vector<int32_t>> prompts(size_t n) {
    std::vector<std::vector<int32_t>> p;
    for (size_t i = 0; i < n; ++i) p.push_back(prompt_of(i));
    return p;
  }

  /// Submits every prompt at once; the tokens of each, in order.
  static std::vector<std::vector<int32_t>> run_all(engine& e, const std::vector<std::vector<int32_t>>& ps, int n = 12) {
    std::vector<std::future<completed_request>> futs;
    for (const auto& p : ps) {
      auto pr = std::make_shared<std::promise<completed_request>>();
      auto acc = std::make_shared<completed_request>();
      futs.push_back(pr->get_future());
      e.submit(p, test::greedy(n), [pr, acc](const stream_event& ev) {
        if (ev.kind == static_cast<uint8_t>(stream_kind::token)) {
          acc->tokens.insert(acc->tokens.end(), ev.tokens.begin(), ev.tokens.end());
        } else {
          acc->final = ev;
          pr->set_value(*acc);
        }
      });
    }
    std::vector<std::vector<int32_t>> out;
    for (auto& f : futs) {
      EXPECT_EQ(f.wait_for(120s), std::future_status::ready);
      auto r = f.get();
      EXPECT_TRUE(r.ok()) << r.final.error;
      out.push_back(r.tokens);
    }
    return out;
  }

  static const std::vector<std::vector<int32_t>>& reference() {
    static const auto ref = [] {
      auto e = start_engine({});
      return run_all(*e, prompts(8));
    }();
    return ref;
  }

  /// Waits until the decode node's first peer's report satisfies `ok`.
  static bool wait_first_peer(engine& e, const std::function<bool(const peer_report&)>& ok, double timeout_s = 10) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      auto p = e.peers();
      if (!p.empty() && ok(p[0])) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  /// Waits until the decode node's first peer is in `state`.
  static bool wait_peer(engine& e, const std::string& state, double timeout_s = 10) {
    return wait_first_peer(e, [&](const peer_report& p) { return p.state == state; }, timeout_s);
  }

  static void expect_pools_empty(engine& e) {
    auto s = e.stats();
    ASSERT_TRUE(s) << s.err().what();
    EXPECT_EQ(s->waiting + s->prefilling + s->decoding, 0u);
    EXPECT_EQ(e.device().kv_pool().used_blocks(), s->prefix_cache_blocks);
  }

  static inline std::shared_ptr<const model> model_;
};

}  // namespace fw::actors::test_support
