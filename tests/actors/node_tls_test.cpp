// The node link over TLS ([node] tls_cert / tls_key / tls_ca, CAF's OpenSSL module), two nodes
// in one process over loopback: nodes whose certificates one CA signs link, serve the prompts
// remotely and give the one-node tokens (with the shared secret on top too); a plain decode node
// cannot link to a TLS prefill node, nor a TLS decode node to a plain one, nor a decode node whose
// certificate another CA signs: each prefills its prompts here, loses none, and the TLS prefill
// node keeps serving the nodes it trusts; unusable files are refused at start, before CAF's
// network thread reads them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/node_link_fixture.hpp"
#include "tests/support/test_certs.hpp"

namespace fw::actors {
namespace {

class node_tls_test : public test_support::node_link_fixture {
 protected:
  static void SetUpTestSuite() {
    node_link_fixture::SetUpTestSuite();
    dir_ = std::filesystem::temp_directory_path() / ("fw_node_tls_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ca_ = test::test_cert::authority(dir_, "nodes-ca");
    other_ca_ = test::test_cert::authority(dir_, "other-ca");
    prefill_ = ca_.issue(dir_, "prefill");
    decode_ = ca_.issue(dir_, "decode");
    stranger_ = other_ca_.issue(dir_, "stranger");
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(dir_);
    node_link_fixture::TearDownTestSuite();
  }

  static link_tls tls_of(const test::test_cert& c, const test::test_cert& ca) { return {c.cert, c.key, ca.cert}; }
  static prefill_node_options tls_node(std::string secret = {}) {
    prefill_node_options o;
    o.tls = tls_of(prefill_, ca_);
    o.secret = std::move(secret);
    return o;
  }
  static std::unique_ptr<engine> decode_node(uint16_t port, link_tls tls, std::string secret = {}) {
    return start_engine({port}, 3.0, nullptr, std::move(secret), 1, std::move(tls));
  }
  /// The decode node never links: its peer settles in a failed state saying `why` and every
  /// prompt is prefilled here with the one-node tokens.
  static void expect_unlinked_and_served_here(engine& e, const std::string& why) {
    EXPECT_FALSE(wait_peer(e, "connected", 1.5));
    EXPECT_EQ(run_all(e, prompts(4)), std::vector<std::vector<int32_t>>(reference().begin(), reference().begin() + 4));
    EXPECT_EQ(e.local_prefills(), 4u);
    // Each retry rewrites the reason; one that timed out on a busy machine says so instead of
    // the TLS failure, so wait (bounded) for a retry that reached the handshake.
    wait_first_peer(e, [&](const peer_report& p) { return p.reason.find(why) != std::string::npos; });
    const auto p = e.peers();
    ASSERT_EQ(p.size(), 1u);
    EXPECT_NE(p[0].state, "connected");
    EXPECT_FALSE(p[0].reason.empty());
    EXPECT_NE(p[0].reason.find(why), std::string::npos) << p[0].reason;
    expect_pools_empty(e);
  }

  static inline std::filesystem::path dir_;
  static inline test::test_cert ca_, other_ca_, prefill_, decode_, stranger_;
};

TEST_F(node_tls_test, nodes_of_one_ca_link_over_tls_and_give_the_tokens_of_one_node) {
  auto node = start_node(0, tls_node());
  ASSERT_TRUE(node);
  auto e = decode_node(node->port(), tls_of(decode_, ca_));
  ASSERT_TRUE(e);
  ASSERT_TRUE(wait_peer(*e, "connected")) << e->peers()[0].reason;
  EXPECT_EQ(run_all(*e, prompts(8)), reference());
  EXPECT_EQ(e->peers()[0].prefills, 8u);
  EXPECT_EQ(e->local_prefills(), 0u);
  EXPECT_EQ(node->counters().prefills.load(), 8u);
  expect_pools_empty(*e);
}

TEST_F(node_tls_test, tls_and_the_shared_secret_together) {
  const std::string secret = "the nodes' shared secret over TLS";
  auto node = start_node(0, tls_node(secret));
  ASSERT_TRUE(node);
  auto e = decode_node(node->port(), tls_of(decode_, ca_), secret);
  ASSERT_TRUE(e);
  ASSERT_TRUE(wait_peer(*e, "connected")) << e->peers()[0].reason;
  EXPECT_EQ(run_all(*e, prompts(8)), reference());
  EXPECT_EQ(node->counters().prefills.load(), 8u);
  EXPECT_EQ(node->counters().refused.load(), 0u);
}

TEST_F(node_tls_test, plain_and_tls_nodes_do_not_link_and_prompts_are_prefilled_here) {
  auto tls = start_node(0, tls_node());
  ASSERT_TRUE(tls);
  {
    SCOPED_TRACE("a plain decode node, a TLS prefill node");
    auto e = decode_node(tls->port(), {});
    ASSERT_TRUE(e);
    expect_unlinked_and_served_here(*e, "a prefill node on TLS drops a node without [node] tls_*");
  }
  {
    SCOPED_TRACE("a TLS decode node, a plain prefill node");
    auto plain = start_node();
    ASSERT_TRUE(plain);
    auto e = decode_node(plain->port(), tls_of(decode_, ca_));
    ASSERT_TRUE(e);
    expect_unlinked_and_served_here(*e, "no TLS session");
    EXPECT_EQ(plain->counters().prefills.load(), 0u);
  }
  EXPECT_EQ(tls->counters().prefills.load(), 0u);
  // The TLS prefill node kept serving: a decode node it trusts links and is served.
  auto e = decode_node(tls->port(), tls_of(decode_, ca_));
  ASSERT_TRUE(wait_peer(*e, "connected")) << e->peers()[0].reason;
  EXPECT_EQ(run_all(*e, prompts(2)), std::vector<std::vector<int32_t>>(reference().begin(), reference().begin() + 2));
  EXPECT_EQ(tls->counters().prefills.load(), 2u);
}

TEST_F(node_tls_test, a_decode_node_whose_certificate_another_ca_signs_is_not_served) {
  auto node = start_node(0, tls_node());
  ASSERT_TRUE(node);
  {
    SCOPED_TRACE("neither side's CA signs the other's certificate");
    auto e = decode_node(node->port(), tls_of(stranger_, other_ca_));
    ASSERT_TRUE(e);
    expect_unlinked_and_served_here(*e, "no TLS session");
  }
  {
    SCOPED_TRACE("it trusts the prefill node's CA, but the prefill node does not trust its certificate");
    const std::string both = (dir_ / "both-cas.pem").string();
    {
      std::ofstream out(both);
      out << std::ifstream(other_ca_.cert).rdbuf() << std::ifstream(ca_.cert).rdbuf();
    }
    auto e = decode_node(node->port(), {stranger_.cert, stranger_.key, both});
    ASSERT_TRUE(e);
    expect_unlinked_and_served_here(*e, "no TLS session");
  }
  EXPECT_EQ(node->counters().prefills.load(), 0u);
}

TEST_F(node_tls_test, unusable_files_are_refused_at_start_naming_the_file) {
  const auto expired = ca_.issue(dir_, "expired", -2 * 86400, -86400);
  auto n = prefill_node::start(model_, device(), identity("prefill node cpu:0", *device()), node_address{"127.0.0.1", 0},
                               [&] {
                                 prefill_node_options o;
                                 o.tls = tls_of(expired, ca_);
                                 return o;
                               }());
  ASSERT_FALSE(n);
  EXPECT_NE(n.err().message.find("node.tls_cert " + expired.cert + ": the certificate has expired"), std::string::npos)
      << n.err().message;

  engine_limits lim;
  lim.nodes.peers.push_back(node_address{"127.0.0.1", 1});
  lim.nodes.tls = {decode_.cert, stranger_.key, ca_.cert};
  auto e = engine::start(model_, device_set(device()), lim);
  ASSERT_FALSE(e);
  EXPECT_NE(e.err().message.find("not the private key of node.tls_cert"), std::string::npos) << e.err().message;
}

}  // namespace
}  // namespace fw::actors
