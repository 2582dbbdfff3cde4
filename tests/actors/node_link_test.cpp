// Prefill and decode on two nodes connected by CAF's network layer, in one test process (two
// actor systems, a real loopback TCP connection, a tiny model): a decode node's greedy output
// equals a one-node engine's; its prompts are prefilled by the prefill node and their KV arrives
// as a chunked kv_codec stream; a prefill node of another protocol version or model is refused
// by the handshake (both sides named) and the decode node prefills locally; a damaged stream, a
// prefill node past the deadline and a prefill node that goes away mid-flight each fail over to
// local prefill without losing a request or changing a token; a prefill node back on the same
// port gets the traffic again; garbage on the port is dropped and the node keeps serving; every
// pool ends empty. The multi-process form (kill -9) is tests/server/test_nodes.py.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>

#include <chrono>
#include <future>
#include <thread>

#include "actors/engine.hpp"
#include "actors/node_seal.hpp"
#include "actors/node_service_actor.hpp"
#include "actors/prefill_node.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/sched/peer_choice.hpp"
#include "runtime/setup/device_identity_of.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/node_link_fixture.hpp"
#include "tests/support/sampling_presets.hpp"
#include "tests/support/test_models.hpp"

namespace fw::actors {
namespace {

using namespace std::chrono_literals;

using node_link_test = test_support::node_link_fixture;

TEST_F(node_link_test, the_prefill_node_prefills_and_the_tokens_equal_one_node) {
  auto node = start_node();
  ASSERT_TRUE(node);
  auto e = start_engine({node->port()});
  ASSERT_TRUE(wait_peer(*e, "connected"));
  EXPECT_EQ(run_all(*e, prompts(8)), reference());
  const auto p = e->peers();
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].prefills, 8u);
  EXPECT_EQ(p[0].failovers, 0u);
  EXPECT_EQ(e->local_prefills(), 0u);
  EXPECT_EQ(p[0].name, "prefill node cpu:0");
  EXPECT_GT(p[0].bytes, 8u * kv_stream_header_bytes);
  EXPECT_EQ(node->counters().prefills.load(), 8u);
  EXPECT_EQ(node->counters().bytes.load(), p[0].bytes);
  expect_pools_empty(*e);
  EXPECT_EQ(node->device().kv_pool().used_blocks(), 0u);
  const std::string text = e->render_metrics();
  EXPECT_NE(text.find("flywheel:node_peer_prefills_total{"), std::string::npos);
  EXPECT_NE(text.find("peer=\"127.0.0.1:" + std::to_string(node->port()) + "\"} 8"), std::string::npos);
}

TEST_F(node_link_test, a_prompt_with_a_cached_prefix_goes_to_the_prefill_node_whole_unless_mostly_cached) {
  // A shared 64-token beginning (a system prompt), then: a first prompt, one with a long new
  // part (the node prefills it whole although its beginning is cached here) and one with a
  // short new part (mostly cached: finished here).
  const std::vector<int32_t> base = prompt_of(5);
  const std::vector<int32_t> head(base.begin(), base.begin() + 64);
  auto with_tail = [&](size_t n, int32_t salt) {
    std::vector<int32_t> p = head;
    for (size_t j = 0; j < n; ++j) p.push_back(static_cast<int32_t>(3 + (salt * 31 + j * 7) % 250));
    return p;
  };
  const std::vector<std::vector<int32_t>> ps{with_tail(40, 1), with_tail(80, 2), with_tail(10, 3)};
  std::vector<std::vector<int32_t>> want;
  {
    auto one = start_engine({});
    for (const auto& p : ps) want.push_back(run_all(*one, {p})[0]);
  }
  auto node = start_node();
  ASSERT_TRUE(node);
  auto e = start_engine({node->port()}, 3.0, nullptr, {}, 1, {}, 64);
  ASSERT_TRUE(wait_peer(*e, "connected"));
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(run_all(*e, {ps[i]})[0], want[i]) << "prompt " << i;
  const auto s = e->stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->prefix_cache_hits, 2u) << "the second and third prompts found the shared beginning cached";
  const auto p = e->peers();
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].prefills, 2u) << "the first prompt, and the second whole";
  EXPECT_EQ(p[0].failovers, 0u);
  EXPECT_EQ(e->local_prefills(), 1u) << "the third, mostly cached";
  EXPECT_EQ(node->counters().prefills.load(), 2u);
  expect_pools_empty(*e);

  // The same when every stream arrives damaged: the prompt sent whole is prefilled whole here
  // (not after the cached rows it no longer holds), the tokens unchanged.
  auto faults = std::make_shared<engine_faults>();
  faults->damage_kv_stream = [](uint64_t, std::vector<std::byte>& s) { s[s.size() / 2] ^= std::byte{0x40}; };
  auto d = start_engine({node->port()}, 3.0, faults, {}, 1, {}, 64);
  ASSERT_TRUE(wait_peer(*d, "connected"));
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(run_all(*d, {ps[i]})[0], want[i]) << "prompt " << i << ", failed over";
  EXPECT_EQ(d->peers()[0].failovers, 2u);
  EXPECT_EQ(d->local_prefills(), 3u);
  expect_pools_empty(*d);
}

TEST_F(node_link_test, two_prefill_nodes_share_the_prompts) {
  auto a = start_node(), b = start_node();
  ASSERT_TRUE(a && b);
  auto e = start_engine({a->port(), b->port()});
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < end) {
    auto p = e->peers();
    if (p.size() == 2 && p[0].state == "connected" && p[1].state == "connected") break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(run_all(*e, prompts(8)), reference());
  const auto p = e->peers();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_GT(p[0].prefills, 0u);
  EXPECT_GT(p[1].prefills, 0u);
  EXPECT_EQ(p[0].prefills + p[1].prefills, 8u);
}

TEST_F(node_link_test, no_reachable_peer_means_local_prefill) {
  // A port nobody listens on: bind, note it, close.
  uint16_t port = 0;
  {
    auto n = start_node();
    ASSERT_TRUE(n);
    port = n->port();
  }
  auto e = start_engine({port});
  EXPECT_EQ(run_all(*e, prompts(8)), reference());
  EXPECT_EQ(e->local_prefills(), 8u);
  const auto p = e->peers();
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].state, "down");
  EXPECT_FALSE(p[0].reason.empty());
  expect_pools_empty(*e);
}

TEST_F(node_link_test, a_peer_of_another_protocol_version_is_refused_naming_both_sides) {
  prefill_node_options o;
  o.protocol = node_protocol_version + 98;
  auto node = start_node(0, o);
  ASSERT_TRUE(node);
  auto e = start_engine({node->port()});
  ASSERT_TRUE(wait_peer(*e, "refused"));
  const auto p = e->peers();
  EXPECT_NE(p[0].reason.find("version " + std::to_string(node_protocol_version + 98)), std::string::npos) << p[0].reason;
  EXPECT_NE(p[0].reason.find("decode node cpu:0"), std::string::npos) << p[0].reason;
  EXPECT_NE(p[0].reason.find("prefill node cpu:0"), std::string::npos) << p[0].reason;
  EXPECT_EQ(run_all(*e, prompts(8)), reference());
  EXPECT_EQ(e->local_prefills(), 8u);
  EXPECT_GE(node->counters().refused.load(), 1u);
  EXPECT_EQ(node->counters().prefills.load(), 0u);
}

TEST_F(node_link_test, a_peer_serving_another_model_file_is_refused) {
  auto node = start_node(0, {}, [](device_identity& id) { id.model_fingerprint = "crc32c:00000000, 1 MB"; });
  ASSERT_TRUE(node);
  auto e = start_engine({node->port()});
  ASSERT_TRUE(wait_peer(*e, "refused"));
  EXPECT_NE(e->peers()[0].reason.find("model"), std::string::npos) << e->peers()[0].reason;
  EXPECT_EQ(run_all(*e, prompts(4)), std::vector(reference().begin(), reference().begin() + 4));
  EXPECT_EQ(node->counters().prefills.load(), 0u);
}

TEST_F(node_link_test, a_damaged_stream_is_refused_and_the_prompt_recomputed_here) {
  auto node = start_node();
  ASSERT_TRUE(node);
  auto faults = std::make_shared<engine_faults>();
  faults->damage_kv_stream = [](uint64_t id, std::vector<std::byte>& s) {
    if (id % 2 == 0) s[s.size() / 2] ^= std::byte{0x40};  // payload bit flip
    else s.resize(s.size() - 7);                           // truncated
  };
  auto e = start_engine({node->port()}, 3.0, faults);
  ASSERT_TRUE(wait_peer(*e, "connected"));
  EXPECT_EQ(run_all(*e, prompts(8)), reference());
  EXPECT_EQ(e->peers()[0].failovers, 8u);
  EXPECT_EQ(e->local_prefills(), 8u);
  expect_pools_empty(*e);
}

TEST_F(node_link_test, a_prefill_node_past_the_deadline_fails_over_and_the_request_completes) {
  prefill_node_options o;
  o.before_prefill = [](uint64_t) { std::this_thread::sleep_for(400ms); };
  auto node = start_node(0, o);
  ASSERT_TRUE(node);
  auto e = start_engine({node->port()}, 0.1);
  ASSERT_TRUE(wait_peer(*e, "connected"));
  EXPECT_EQ(run_all(*e, prompts(2)), std::vector(reference().begin(), reference().begin() + 2));
  EXPECT_GE(e->peers()[0].failovers, 1u);
  expect_pools_empty(*e);
}

TEST_F(node_link_test, a_prefill_node_lost_mid_flight_loses_nothing_and_gets_traffic_again_when_back) {
  // The node dies mid-flight: once `dead` is set its next prefill throws, which kills its
  // service (as a crash would; the multi-process kill -9 is tests/server/test_nodes.py).
  auto dead = std::make_shared<std::atomic<bool>>(false);
  prefill_node_options slow;
  slow.before_prefill = [dead](uint64_t) {
    std::this_thread::sleep_for(30ms);
    if (dead->load()) throw std::runtime_error("the prefill node died");
  };
  auto node = start_node(0, slow);
  ASSERT_TRUE(node);
  const uint16_t port = node->port();
  auto e = start_engine({port});
  ASSERT_TRUE(wait_peer(*e, "connected"));
  auto ps = prompts(8);
  for (size_t i = 0; i < 8; ++i) ps.push_back(prompt_of(i));  // 16 in flight
  auto want = reference();
  want.insert(want.end(), reference().begin(), reference().end());
  std::thread killer([&] {
    while (node->counters().prefills.load() < 2) std::this_thread::sleep_for(1ms);
    dead->store(true);
  });
  EXPECT_EQ(run_all(*e, ps), want);
  killer.join();
  node->shutdown();
  ASSERT_TRUE(wait_peer(*e, "down", 5));
  auto p = e->peers();
  EXPECT_GE(p[0].failovers, 1u);
  EXPECT_GE(p[0].prefills, 2u);
  EXPECT_LT(p[0].prefills, 16u);
  EXPECT_EQ(p[0].prefills + e->local_prefills(), 16u);
  const uint64_t before = p[0].prefills;
  expect_pools_empty(*e);

  // Back on the same port: reconnected within the backoff, and prompts go there again.
  node.reset();
  auto again = start_node(port);
  ASSERT_TRUE(again);
  ASSERT_TRUE(wait_peer(*e, "connected"));
  EXPECT_EQ(run_all(*e, prompts(4)), std::vector(reference().begin(), reference().begin() + 4));
  p = e->peers();
  EXPECT_EQ(p[0].prefills, before + 4);
  EXPECT_GE(p[0].connects, 2u);
}

TEST_F(node_link_test, garbage_on_the_port_is_dropped_and_the_node_keeps_serving) {
  auto node = start_node();
  ASSERT_TRUE(node);
  for (size_t n : {1, 64, 4096, 100000}) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(node->port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    std::vector<char> junk(n);
    for (size_t i = 0; i < n; ++i) junk[i] = static_cast<char>((i * 131 + 7) ^ (i >> 3));
    (void)!::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
    ::close(fd);
  }
  auto e = start_engine({node->port()});
  ASSERT_TRUE(wait_peer(*e, "connected"));
  EXPECT_EQ(run_all(*e, prompts(4)), std::vector(reference().begin(), reference().begin() + 4));
  EXPECT_EQ(node->counters().prefills.load(), 4u);
}

TEST_F(node_link_test, the_local_prefill_worker_dying_with_remote_prefills_in_flight_loses_nothing) {
  // Short prompts are prefilled here, long ones by the (slow) prefill node; the local worker dies
  // on its first job, which takes the node link (linked) with it while remote prefills are out.
  prefill_node_options slow;
  slow.before_prefill = [](uint64_t) { std::this_thread::sleep_for(150ms); };
  auto node = start_node(0, slow);
  ASSERT_TRUE(node);
  auto faults = std::make_shared<engine_faults>();
  auto crashes = std::make_shared<std::atomic<int>>(0);
  faults->crash_prefill = [crashes](uint64_t) { return crashes->fetch_add(1) == 1; };
  auto e = start_engine({node->port()}, 3.0, faults, {}, 40);
  ASSERT_TRUE(wait_peer(*e, "connected"));
  EXPECT_EQ(run_all(*e, prompts(8)), reference());
  EXPECT_GE(crashes->load(), 2);
  expect_pools_empty(*e);
}

constexpr const char* secret_a = "the nodes' shared secret, A";
constexpr const char* secret_b = "another shared secret, B";

prefill_node_options with_secret(std::string secret) {
  prefill_node_options o;
  o.secret = std::move(secret);
  return o;
}

TEST_F(node_link_test, nodes_that_share_the_secret_prove_it_and_serve_sealed) {
  auto node = start_node(0, with_secret(secret_a));
  ASSERT_TRUE(node);
  auto e = start_engine({node->port()}, 3.0, nullptr, secret_a);
  ASSERT_TRUE(wait_peer(*e, "connected")) << e->peers()[0].reason;
  EXPECT_EQ(run_all(*e, prompts(8)), reference());
  EXPECT_EQ(node->counters().prefills.load(), 8u);
  EXPECT_EQ(e->local_prefills(), 0u);
  EXPECT_EQ(node->counters().refused.load() + node->counters().forged.load(), 0u);
  EXPECT_EQ(e->peers()[0].forged, 0u);
  expect_pools_empty(*e);
}

TEST_F(node_link_test, a_decode_node_without_the_secret_or_with_another_is_refused_and_prefills_here) {
  auto node = start_node(0, with_secret(secret_a));
  ASSERT_TRUE(node);
  {
    auto e = start_engine({node->port()});
    ASSERT_TRUE(wait_peer(*e, "refused"));
    EXPECT_NE(e->peers()[0].reason.find("requires the nodes' shared secret"), std::string::npos) << e->peers()[0].reason;
    EXPECT_EQ(run_all(*e, prompts(4)), std::vector(reference().begin(), reference().begin() + 4));
    EXPECT_EQ(e->local_prefills(), 4u);
  }
  {
    auto e = start_engine({node->port()}, 3.0, nullptr, secret_b);
    ASSERT_TRUE(wait_peer(*e, "refused"));
    EXPECT_NE(e->peers()[0].reason.find("did not prove the shared secret"), std::string::npos) << e->peers()[0].reason;
    EXPECT_EQ(run_all(*e, prompts(2)), std::vector(reference().begin(), reference().begin() + 2));
  }
  EXPECT_EQ(node->counters().prefills.load(), 0u);
  // A prefill node without a secret is refused by a decode node that requires one.
  auto open = start_node();
  ASSERT_TRUE(open);
  auto e = start_engine({open->port()}, 3.0, nullptr, secret_a);
  ASSERT_TRUE(wait_peer(*e, "refused"));
  EXPECT_NE(e->peers()[0].reason.find("has no shared secret"), std::string::npos) << e->peers()[0].reason;
  EXPECT_EQ(run_all(*e, prompts(2)), std::vector(reference().begin(), reference().begin() + 2));
  EXPECT_EQ(open->counters().prefills.load(), 0u);
}

TEST_F(node_link_test, tampered_kv_chunks_are_dropped_and_the_prompts_recomputed_here) {
  prefill_node_options o = with_secret(secret_a);
  o.tamper_chunk = [](kv_chunk& c) {
    if (c.seq == 0 && !c.bytes.empty()) c.bytes[c.bytes.size() / 3] ^= 0x10;  // the network flips a bit
  };
  auto node = start_node(0, o);
  ASSERT_TRUE(node);
  auto e = start_engine({node->port()}, 3.0, nullptr, secret_a);
  ASSERT_TRUE(wait_peer(*e, "connected")) << e->peers()[0].reason;
  EXPECT_EQ(run_all(*e, prompts(8)), reference());
  const auto p = e->peers()[0];
  EXPECT_EQ(p.forged, 8u);     // each stream's first chunk
  EXPECT_EQ(p.failovers, 8u);  // each stream ended short
  EXPECT_EQ(e->local_prefills(), 8u);
  expect_pools_empty(*e);
}

/// A client that speaks the node protocol by hand over a real connection: an attacker, or a
/// recording of a decode node's messages.
class raw_client {
 public:
  raw_client() : system_(cfg_) {}
  bool connect(uint16_t port) {
    auto s = system_.middleman().remote_actor<node_service_actor>("127.0.0.1", port);
    if (!s) return false;
    svc_ = *s;
    return true;
  }
  node_hello hello(node_hello h) {
    node_hello out;
    caf::scoped_actor self{system_};
    self->request(svc_, 5s, hello_atom::value, std::move(h)).receive([&](node_hello& r) { out = r; }, [](caf::error&) {});
    return out;
  }
  std::string auth(std::string proof) {
    std::string out = "(no answer)";
    caf::scoped_actor self{system_};
    self->request(svc_, 5s, auth_atom::value, node_proof{std::move(proof)})
        .receive([&](std::string& r) { out = r; }, [](caf::error&) {});
    return out;
  }
  remote_prefill_done prefill(remote_prefill_job job) {
    remote_prefill_done out;
    out.error = "(no answer)";
    caf::scoped_actor self{system_};
    self->request(svc_, 30s, prefill_atom::value, std::move(job))
        .receive([&](remote_prefill_done& r) { out = r; }, [](caf::error&) {});
    return out;
  }

 private:
  struct config : caf::actor_system_config {
    config() {
      load<caf::io::middleman>();
      add_node_types(*this);
      set("scheduler.max-threads", 1);
      set("logger.verbosity", caf::atom("quiet"));
    }
  } cfg_;
  caf::actor_system system_;
  node_service_actor svc_;
};

TEST_F(node_link_test, a_replayed_handshake_a_forged_proof_and_unsealed_or_replayed_jobs_are_refused_and_counted) {
  auto node = start_node(0, with_secret(secret_a));
  ASSERT_TRUE(node);
  auto dev = device();
  node_hello mine{node_protocol_version, "decode", identity("decode node cpu:0", *dev), make_nonce(), {}};
  remote_prefill_job job{1, prompt_of(0), 0, 4096, {}};
  const auto& c = node->counters();

  raw_client x;
  ASSERT_TRUE(x.connect(node->port()));
  // No handshake: no prompts.
  EXPECT_NE(x.prefill(job).error.find("did not pass the handshake"), std::string::npos);
  // A proof with no challenge, then a guessed one.
  EXPECT_NE(x.auth("guess").find("send hello first"), std::string::npos);
  node_hello theirs = x.hello(mine);
  ASSERT_EQ(theirs.nonce.size(), 32u);
  EXPECT_TRUE(same_tag(theirs.proof, link_proof(secret_a, "prefill", mine.nonce, theirs.nonce)));
  EXPECT_NE(x.auth(std::string(32, 'x')).find("wrong"), std::string::npos);
  EXPECT_NE(x.prefill(job).error.find("did not pass the handshake"), std::string::npos);

  // A genuine session (the client knows the secret), recorded...
  theirs = x.hello(mine);
  const std::string recorded = link_proof(secret_a, "decode", mine.nonce, theirs.nonce);
  EXPECT_EQ(x.auth(recorded), "");
  const std::string key = link_session_key(secret_a, mine.nonce, theirs.nonce);
  EXPECT_NE(x.prefill(job).error.find("seal"), std::string::npos);  // unsealed
  job.seal = seal_of(key, job);
  auto done = x.prefill(job);
  EXPECT_EQ(done.error, "");
  EXPECT_TRUE(sealed_by(key, done));
  EXPECT_GT(done.chunks, 0u);
  EXPECT_NE(x.prefill(job).error.find("sent before"), std::string::npos);  // the same sealed job again
  auto changed = job;
  changed.id = 2;
  changed.tokens.push_back(5);  // sealed for other tokens
  EXPECT_NE(x.prefill(changed).error.find("seal"), std::string::npos);

  // ... and replayed: the same hello and proof meet a new challenge and fail.
  raw_client replay;
  ASSERT_TRUE(replay.connect(node->port()));
  replay.hello(mine);
  EXPECT_NE(replay.auth(recorded).find("wrong"), std::string::npos);
  job.id = 3;
  job.seal = seal_of(key, job);  // the old session's key is dead with it
  EXPECT_NE(replay.prefill(job).error.find("did not pass the handshake"), std::string::npos);

  EXPECT_EQ(c.prefills.load(), 1u);
  EXPECT_GE(c.refused.load(), 3u);
  EXPECT_EQ(c.forged.load(), 3u);

  // The node keeps serving a genuine decode node.
  auto e = start_engine({node->port()}, 3.0, nullptr, secret_a);
  ASSERT_TRUE(wait_peer(*e, "connected")) << e->peers()[0].reason;
  EXPECT_EQ(run_all(*e, prompts(2)), std::vector(reference().begin(), reference().begin() + 2));
  EXPECT_EQ(c.prefills.load(), 3u);
}

TEST(peer_choice, the_least_loaded_connected_peer_or_local_with_a_reason) {
  std::vector<peer_view> v{{true, 2, 0}, {false, 0, 0}, {true, 1, 9}, {true, 1, 3}};
  EXPECT_EQ(choose_peer(v, 100, 0, 1).peer, 3);  // fewest in flight, then least served
  // A cached prefix goes along (the peer prefills the prompt whole) unless most of it is cached.
  EXPECT_EQ(choose_peer(v, 100, 16, 1).peer, 3);
  EXPECT_EQ(choose_peer(v, 100, 100, 1).peer, 3);
  EXPECT_EQ(choose_peer(v, 100, 101, 1).peer, -1);
  EXPECT_NE(choose_peer(v, 100, 101, 1).reason.find("cached"), std::string::npos);
  EXPECT_EQ(choose_peer(v, 3, 16, 4).peer, -1) << "min_remote counts the new tokens";
  EXPECT_EQ(choose_peer(v, 3, 0, 4).peer, -1);
  EXPECT_EQ(choose_peer(v, 0, 0, 0).peer, -1);
  std::vector<peer_view> down{{false, 0, 0}};
  EXPECT_EQ(choose_peer(down, 100, 0, 1).reason, "no prefill node connected");
  EXPECT_EQ(choose_peer({}, 100, 0, 1).reason, "no prefill node configured");
}

TEST(peer_choice, the_peer_expected_to_finish_first_and_local_when_all_would_miss_the_deadline) {
  // 1000 tokens/s with 2000 queued, versus 500 tokens/s with nothing queued.
  std::vector<peer_view> v{{true, 2, 5, 2000, 1000}, {true, 3, 0, 0, 500}};
  EXPECT_EQ(choose_peer(v, 500, 0, 1, 3.0).peer, 1);   // 1.0 s vs 2.5 s
  EXPECT_EQ(choose_peer(v, 3000, 0, 1, 10.0).peer, 0); // 5.0 s vs 6.0 s
  const auto late = choose_peer(v, 3000, 0, 1, 4.0);
  EXPECT_EQ(late.peer, -1);
  EXPECT_NE(late.reason.find("deadline"), std::string::npos);
  // The peer computes the cached tokens too: 500 new after 500 cached take peer 1 2.0 s, not 1.0.
  EXPECT_EQ(choose_peer(v, 500, 500, 1, 2.5).peer, 1);
  EXPECT_EQ(choose_peer(v, 500, 500, 1, 1.5).peer, -1);
  std::vector<peer_view> unmeasured{{true, 9, 0, 100000, 0}};
  EXPECT_EQ(choose_peer(unmeasured, 3000, 0, 1, 0.1).peer, 0);  // no rate yet: no estimate
}

TEST(peer_choice, reconnect_backoff_doubles_to_its_cap) {
  EXPECT_DOUBLE_EQ(reconnect_delay_s(0, 0.1, 5), 0.1);
  EXPECT_DOUBLE_EQ(reconnect_delay_s(3, 0.1, 5), 0.8);
  EXPECT_DOUBLE_EQ(reconnect_delay_s(10, 0.1, 5), 5);
  EXPECT_DOUBLE_EQ(reconnect_delay_s(4000000000u, 0.1, 5), 5);
}

TEST(node_hello, the_handshake_names_both_sides_of_each_mismatch) {
  node_hello a{node_protocol_version, "prefill", {}, {}, {}}, b{node_protocol_version, "decode", {}, {}, {}};
  a.identity.name = "prefill node cpu:0";
  b.identity.name = "decode node cpu:0";
  for (auto* h : {&a, &b}) {
    h->identity.kind = "cpu";
    h->identity.model_fingerprint = "crc32c:1, 1 MB";
    h->identity.kv_format_version = 1;
    h->identity.kv_layers = 2;
    h->identity.kv_heads = 2;
    h->identity.kv_head_dim = 8;
  }
  EXPECT_EQ(refuse_hello(a, b), "");
  b.protocol = 7;
  EXPECT_NE(refuse_hello(a, b).find("decode node cpu:0 speaks version 7"), std::string::npos);
  b.protocol = node_protocol_version;
  b.identity.kv_head_dim = 16;
  const std::string why = refuse_hello(a, b);
  EXPECT_NE(why.find("prefill node cpu:0"), std::string::npos) << why;
  EXPECT_NE(why.find("decode node cpu:0"), std::string::npos) << why;
}

}  // namespace
}  // namespace fw::actors
