// The node link's TLS files (runtime/net/link_tls): a CA-signed certificate with its key and the
// CA passes; each way a set of files is unusable is refused before CAF reads them (it would throw
// from its network thread), naming the key, the file and what is wrong: unreadable, not PEM, a
// key of another certificate, an encrypted key, an expired or not-yet-valid certificate, a CA
// that does not sign the certificate. Certificates are made here with libcrypto.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runtime/net/link_tls.hpp"
#include "tests/support/test_certs.hpp"

namespace fw {
namespace {

class link_tls_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("fw_link_tls_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ca_ = test::test_cert::authority(dir_, "ca");
    other_ca_ = test::test_cert::authority(dir_, "other-ca");
    node_ = ca_.issue(dir_, "node");
    stranger_ = other_ca_.issue(dir_, "stranger");
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  static std::string message(const link_tls& t) {
    auto ok = check_link_tls(t);
    return ok ? std::string() : ok.err().message;
  }
  static std::string file(const std::string& name, const std::string& content) {
    const auto p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

  static inline std::filesystem::path dir_;
  static inline test::test_cert ca_, other_ca_, node_, stranger_;
};

TEST_F(link_tls_test, a_certificate_its_key_and_the_ca_that_signed_it_pass) {
  EXPECT_TRUE(link_tls{}.enabled() == false);
  const link_tls t{node_.cert, node_.key, ca_.cert};
  EXPECT_TRUE(t.enabled());
  EXPECT_EQ(message(t), "");
  // A CA's own certificate is verifiable by itself (a one-certificate deployment).
  EXPECT_EQ(message({ca_.cert, ca_.key, ca_.cert}), "");
}

TEST_F(link_tls_test, unreadable_or_non_pem_files_are_refused_naming_the_key_and_file) {
  const std::string missing = (dir_ / "missing.pem").string();
  auto m = message({missing, node_.key, ca_.cert});
  EXPECT_NE(m.find("node.tls_cert: cannot read " + missing), std::string::npos) << m;
  m = message({node_.cert, missing, ca_.cert});
  EXPECT_NE(m.find("node.tls_key: cannot read"), std::string::npos) << m;
  m = message({node_.cert, node_.key, missing});
  EXPECT_NE(m.find("node.tls_ca: cannot read"), std::string::npos) << m;
  m = message({node_.cert, node_.key, ""});
  EXPECT_NE(m.find("node.tls_ca is empty"), std::string::npos) << m;

  const std::string junk = file("junk.pem", "not a certificate\n");
  m = message({junk, node_.key, ca_.cert});
  EXPECT_NE(m.find("node.tls_cert " + junk + ": not a PEM certificate chain"), std::string::npos) << m;
  m = message({node_.cert, junk, ca_.cert});
  EXPECT_NE(m.find("node.tls_key " + junk + ": not an unencrypted PEM private key"), std::string::npos) << m;
  m = message({node_.cert, node_.key, junk});
  EXPECT_NE(m.find("node.tls_ca " + junk + ": no PEM CA certificate"), std::string::npos) << m;
}

TEST_F(link_tls_test, a_key_of_another_certificate_or_an_encrypted_key_is_refused) {
  auto m = message({node_.cert, stranger_.key, ca_.cert});
  EXPECT_NE(m.find("node.tls_key " + stranger_.key + ": not the private key of node.tls_cert " + node_.cert), std::string::npos) << m;

  // The same key, encrypted: refused rather than a passphrase prompt on the terminal.
  BIO* bio = BIO_new_file(node_.key.c_str(), "r");
  EVP_PKEY* k = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ASSERT_NE(k, nullptr);
  const std::string enc = (dir_ / "encrypted.key").string();
  FILE* f = std::fopen(enc.c_str(), "wb");
  ASSERT_TRUE(PEM_write_PrivateKey(f, k, EVP_aes_128_cbc(), nullptr, 0, nullptr, const_cast<char*>("pass phrase")));
  std::fclose(f);
  EVP_PKEY_free(k);
  m = message({node_.cert, enc, ca_.cert});
  EXPECT_NE(m.find("node.tls_key " + enc + ": not an unencrypted PEM private key"), std::string::npos) << m;
}

TEST_F(link_tls_test, an_expired_or_future_certificate_is_refused) {
  const auto expired = ca_.issue(dir_, "expired", -2 * 86400, -86400);
  auto m = message({expired.cert, expired.key, ca_.cert});
  EXPECT_NE(m.find("node.tls_cert " + expired.cert + ": the certificate has expired"), std::string::npos) << m;
  const auto future = ca_.issue(dir_, "future", 86400, 2 * 86400);
  m = message({future.cert, future.key, ca_.cert});
  EXPECT_NE(m.find("the certificate is not valid yet"), std::string::npos) << m;
}

TEST_F(link_tls_test, a_certificate_the_ca_file_does_not_verify_is_refused) {
  auto m = message({stranger_.cert, stranger_.key, ca_.cert});
  EXPECT_NE(m.find("node.tls_cert " + stranger_.cert + ": node.tls_ca " + ca_.cert + " does not verify it"), std::string::npos) << m;
  // A leaf is no CA: a certificate signed by the CA is not verified by a peer leaf in tls_ca.
  m = message({stranger_.cert, stranger_.key, node_.cert});
  EXPECT_NE(m.find("does not verify it"), std::string::npos) << m;
}

}  // namespace
}  // namespace fw
