// The node link's shared secret, proofs and seals (runtime/net/link_auth): the secret is read
// from a file (trailing newline trimmed) or the environment, and a short or unreadable one is
// refused; the HMAC matches Python's hmac module on the same framed bytes (RFC 2104 via an
// independent implementation); framing keeps different field lists apart; proofs depend on the
// secret, the role and both nonces, so neither a replayed nor a reflected proof passes.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "runtime/net/link_auth.hpp"

namespace fw {
namespace {

std::string hex(const std::string& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

std::string write_file(const std::string& name, const std::string& content) {
  const auto p = std::filesystem::temp_directory_path() / ("fw_link_auth_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary) << content;
  ::chmod(p.c_str(), 0600);
  return p.string();
}

TEST(link_auth, the_secret_comes_from_the_file_then_the_environment_and_a_short_one_is_refused) {
  const auto f = write_file("ok", "0123456789abcdef0123\n\n");
  auto s = load_link_secret(f, "ignored-because-the-file-wins");
  ASSERT_TRUE(s) << s.err().message;
  EXPECT_EQ(*s, "0123456789abcdef0123");

  s = load_link_secret("", "an environment secret of some length");
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, "an environment secret of some length");

  s = load_link_secret("", nullptr);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->empty());  // unauthenticated
  EXPECT_TRUE(load_link_secret("", "")->empty());

  auto shrt = load_link_secret(write_file("short", "tooshort\n"), nullptr);
  ASSERT_FALSE(shrt);
  EXPECT_NE(shrt.err().message.find("at least 16"), std::string::npos) << shrt.err().message;
  EXPECT_FALSE(load_link_secret("", "short"));
  auto missing = load_link_secret("/nonexistent/flywheel/secret", nullptr);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.err().message.find("/nonexistent/flywheel/secret"), std::string::npos);
  EXPECT_FALSE(load_link_secret(write_file("empty", "\n"), "the environment does not rescue an empty file"));
}

TEST(link_auth, hmac_sha256_matches_an_independent_implementation_on_the_framed_bytes) {
  // python3: hmac.new(b'Jefe', struct.pack('<Q', 28) + b'what do ya want for nothing?', sha256)
  EXPECT_EQ(hex(hmac_sha256("Jefe").put("what do ya want for nothing?").finish()),
            "c0b77cf99718fc7f09c8727ff74305bde25761b2db20b1081cfcc82a3ec6029e");
  // python3: hmac.new(b'Jefe', struct.pack('<Q', 7), sha256)
  EXPECT_EQ(hex(hmac_sha256("Jefe").put_u64(7).finish()), "8da260b80201e811528660e6c979d390739c2b09c4911eaf16a84216cd01b2cc");
}

TEST(link_auth, framing_keeps_different_field_lists_apart) {
  EXPECT_NE(hmac_sha256("k").put("ab").put("c").finish(), hmac_sha256("k").put("a").put("bc").finish());
  EXPECT_NE(hmac_sha256("k").put("").finish(), hmac_sha256("k").finish());
  EXPECT_EQ(hmac_sha256("k").put("ab").put("c").finish(), hmac_sha256("k").put("ab").put("c").finish());
}

TEST(link_auth, proofs_bind_the_secret_the_role_and_both_nonces) {
  const std::string secret = "a shared secret of enough bytes";
  const auto nd = make_nonce(), np = make_nonce();
  ASSERT_EQ(nd.size(), 32u);
  EXPECT_NE(nd, np);  // fresh randomness
  const auto p = link_proof(secret, "decode", nd, np);
  EXPECT_TRUE(same_tag(p, link_proof(secret, "decode", nd, np)));
  EXPECT_FALSE(same_tag(p, link_proof(secret, "prefill", nd, np)));               // reflected
  EXPECT_FALSE(same_tag(p, link_proof(secret, "decode", nd, make_nonce())));      // replayed on a new challenge
  EXPECT_FALSE(same_tag(p, link_proof(secret, "decode", make_nonce(), np)));
  EXPECT_FALSE(same_tag(p, link_proof(secret + "!", "decode", nd, np)));          // another secret
  EXPECT_FALSE(same_tag(p, link_session_key(secret, nd, np)));                    // the key is not a proof
  EXPECT_FALSE(same_tag("", ""));                                                 // nothing proves nothing
  EXPECT_FALSE(same_tag(p, p.substr(0, 31)));
}

}  // namespace
}  // namespace fw
