#include "localcluster/tls.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "localcluster/persistence.h"

namespace unitrain::localcluster {
namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
template <class T>
using Ptr = std::unique_ptr<T, Free>;

std::string openssl_error(std::string_view what) {
  unsigned long e = ERR_get_error();
  char buf[256] = {0};
  if (e != 0) ERR_error_string_n(e, buf, sizeof buf);
  return std::string(what) + ": " + (e != 0 ? buf : "unknown OpenSSL error");
}

std::string bio_string(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

Status add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Ptr<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) return fail(openssl_error(std::string("extension ") + value));
  return {};
}

Result<Ptr<X509>> new_cert(EVP_PKEY* key, const char* common_name, X509* issuer, EVP_PKEY* issuer_key,
                           const std::string& alt_names) {
  Ptr<X509> cert(X509_new());
  if (!cert) return fail(openssl_error("X509_new"));
  X509_set_version(cert.get(), 2);
  // Random 127-bit serials: two certificates of the same CA must never share one.
  unsigned char serial_bytes[16];
  if (RAND_bytes(serial_bytes, sizeof serial_bytes) != 1) return fail(openssl_error("RAND_bytes"));
  serial_bytes[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial_bytes, sizeof serial_bytes, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  // Backdated a little so clocks that are slightly off still accept it.
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("unitrain"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(common_name), -1, -1,
                             0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (issuer == nullptr) {
    if (auto s = add_ext(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE"); !s) return fail(s.error());
    if (auto s = add_ext(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"); !s)
      return fail(s.error());
    if (auto s = add_ext(cert.get(), signer, NID_subject_key_identifier, "hash"); !s) return fail(s.error());
  } else {
    if (auto s = add_ext(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE"); !s) return fail(s.error());
    if (auto s = add_ext(cert.get(), signer, NID_key_usage, "critical,digitalSignature,keyEncipherment"); !s)
      return fail(s.error());
    if (auto s = add_ext(cert.get(), signer, NID_ext_key_usage, "serverAuth"); !s) return fail(s.error());
    if (auto s = add_ext(cert.get(), signer, NID_subject_alt_name, alt_names.c_str()); !s)
      return fail(s.error());
    if (auto s = add_ext(cert.get(), signer, NID_authority_key_identifier, "keyid:always"); !s)
      return fail(s.error());
  }
  if (X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0)
    return fail(openssl_error("X509_sign"));
  return cert;
}

Result<std::string> cert_pem(X509* cert) {
  Ptr<BIO> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return fail(openssl_error("PEM_write_bio_X509"));
  return bio_string(bio.get());
}

Result<std::string> read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return fail("cannot read " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}


}  // namespace

Result<TlsMaterial> make_self_signed_tls() { return make_self_signed_tls("IP:127.0.0.1,IP:::1,DNS:localhost"); }

Result<TlsMaterial> make_self_signed_tls(std::string_view subject_alt_names) {
  Ptr<EVP_PKEY> ca_key(EVP_EC_gen("P-256"));
  Ptr<EVP_PKEY> server_key(EVP_EC_gen("P-256"));
  if (!ca_key || !server_key) return fail(openssl_error("EVP_EC_gen P-256"));
  auto ca = new_cert(ca_key.get(), "unitrain-localcluster-ca", nullptr, nullptr, {});
  if (!ca) return fail(ca.error());
  auto server = new_cert(server_key.get(), "localhost", ca->get(), ca_key.get(), std::string(subject_alt_names));
  if (!server) return fail(server.error());
  TlsMaterial m;
  auto ca_pem = cert_pem(ca->get());
  if (!ca_pem) return fail(ca_pem.error());
  auto server_pem = cert_pem(server->get());
  if (!server_pem) return fail(server_pem.error());
  m.ca_cert_pem = std::move(*ca_pem);
  m.server_cert_pem = std::move(*server_pem);
  Ptr<BIO> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), server_key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return fail(openssl_error("PEM_write_bio_PrivateKey"));
  m.server_key_pem = bio_string(bio.get());
  return m;
}

Result<TlsMaterial> load_or_make_tls(const std::optional<std::string>& state_dir) {
  if (!state_dir) return make_self_signed_tls();
  namespace fs = std::filesystem;
  fs::path dir(*state_dir);
  fs::path ca = dir / "ca.crt", crt = dir / "server.crt", key = dir / "server.key";
  std::error_code ec;
  if (fs::exists(ca, ec) && fs::exists(crt, ec) && fs::exists(key, ec)) {
    TlsMaterial m;
    auto a = read_file(ca);
    auto b = read_file(crt);
    auto c = read_file(key);
    if (!a) return fail(a.error());
    if (!b) return fail(b.error());
    if (!c) return fail(c.error());
    m.ca_cert_pem = std::move(*a);
    m.server_cert_pem = std::move(*b);
    m.server_key_pem = std::move(*c);
    return m;
  }
  auto m = make_self_signed_tls();
  if (!m) return m;
  if (auto s = make_private_dir(dir.string()); !s) return fail(s.error());
  if (auto s = write_private_file(ca.string(), m->ca_cert_pem); !s) return fail(s.error());
  if (auto s = write_private_file(crt.string(), m->server_cert_pem); !s) return fail(s.error());
  if (auto s = write_private_file(key.string(), m->server_key_pem); !s) return fail(s.error());
  return m;
}

}  // namespace unitrain::localcluster
