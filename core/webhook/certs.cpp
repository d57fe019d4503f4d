#include "core/webhook/certs.h"

#include <memory>

#include <fmt/format.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace unitrain::webhook {

namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(ASN1_TIME* p) const { ASN1_TIME_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Free>;
using Cert = std::unique_ptr<X509, Free>;
using Bio = std::unique_ptr<BIO, Free>;

std::string openssl_error(std::string_view what) {
  const unsigned long code = ERR_get_error();
  char buf[256] = {};
  if (code != 0) ERR_error_string_n(code, buf, sizeof buf);
  ERR_clear_error();
  return code != 0 ? fmt::format("{}: {}", what, buf) : std::string(what);
}

std::string to_pem(const Key& key) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string to_pem(const Cert& cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert.get());
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Bio read_bio(std::string_view pem) { return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

Cert parse_cert(std::string_view pem) {
  auto bio = read_bio(pem);
  return Cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

Key parse_key(std::string_view pem) {
  auto bio = read_bio(pem);
  return Key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

bool add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, Free> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

Result<Cert> make_cert(const std::string& common_name, const std::string& organization, EVP_PKEY* key,
                       X509* issuer, EVP_PKEY* issuer_key, SystemTime now, std::chrono::seconds validity,
                       const std::vector<std::pair<int, std::string>>& extensions) {
  Cert cert(X509_new());
  if (!cert) return fail(openssl_error("X509_new"));
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return fail(openssl_error("RAND_bytes"));
  serial[0] &= 0x7f;  // a positive serial number
  std::unique_ptr<BIGNUM, Free> bn(BN_bin2bn(serial, sizeof serial, nullptr));
  BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get()));
  const time_t start = std::chrono::system_clock::to_time_t(now) - 60;
  const time_t end = std::chrono::system_clock::to_time_t(now) + validity.count();
  ASN1_TIME_set(X509_getm_notBefore(cert.get()), start);
  ASN1_TIME_set(X509_getm_notAfter(cert.get()), end);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(organization.c_str()), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509_set_pubkey(cert.get(), key);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  for (const auto& [nid, value] : extensions)
    if (!add_ext(cert.get(), signer, nid, value)) return fail(openssl_error(fmt::format("extension {}", value)));
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) return fail(openssl_error("X509_sign"));
  return cert;
}

}  // namespace

std::vector<std::string> dns_names(const CertOptions& o) {
  const std::string& s = o.service_name;
  const std::string& ns = o.service_namespace;
  return {s, s + "." + ns, s + "." + ns + ".svc", s + "." + ns + ".svc.cluster.local"};
}

Result<CertBundle> generate_certs(const CertOptions& options, SystemTime now) {
  Key ca_key(EVP_EC_gen("P-256"));
  Key key(EVP_EC_gen("P-256"));
  if (!ca_key || !key) return fail(openssl_error("generating an EC P-256 key"));
  auto ca = make_cert(options.ca_name, options.organization, ca_key.get(), nullptr, ca_key.get(), now,
                      options.validity,
                      {{NID_basic_constraints, "critical,CA:TRUE"},
                       {NID_key_usage, "critical,digitalSignature,keyCertSign,cRLSign"},
                       {NID_subject_key_identifier, "hash"}});
  if (!ca) return fail(std::move(ca.error()));
  std::string san;
  for (const auto& n : dns_names(options)) san += (san.empty() ? "DNS:" : ",DNS:") + n;
  for (const auto& ip : options.ip_addresses) san += ",IP:" + ip;
  auto cert = make_cert(dns_names(options)[2], options.organization, key.get(), ca->get(), ca_key.get(), now,
                        options.validity,
                        {{NID_basic_constraints, "critical,CA:FALSE"},
                         {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                         {NID_ext_key_usage, "serverAuth"},
                         {NID_subject_alt_name, san},
                         {NID_authority_key_identifier, "keyid:always"}});
  if (!cert) return fail(std::move(cert.error()));
  return CertBundle{to_pem(*ca), to_pem(ca_key), to_pem(*cert), to_pem(key)};
}

Result<SystemTime> not_after(std::string_view cert_pem) {
  Cert cert = parse_cert(cert_pem);
  if (!cert) return fail(openssl_error("not a PEM certificate"));
  struct tm t = {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &t) != 1) return fail(openssl_error("notAfter"));
  return std::chrono::system_clock::from_time_t(timegm(&t));
}

Status check_certs(const CertBundle& b, const CertOptions& options, SystemTime now, std::chrono::seconds lookahead) {
  Cert ca = parse_cert(b.ca_cert);
  Cert cert = parse_cert(b.cert);
  Key ca_key = parse_key(b.ca_key);
  Key key = parse_key(b.key);
  ERR_clear_error();
  if (!ca) return fail("ca.crt is not a PEM certificate");
  if (!cert) return fail("tls.crt is not a PEM certificate");
  if (!ca_key) return fail("ca.key is not a PEM private key");
  if (!key) return fail("tls.key is not a PEM private key");
  if (X509_check_private_key(ca.get(), ca_key.get()) != 1) return fail(openssl_error("ca.key does not match ca.crt"));
  if (X509_check_private_key(cert.get(), key.get()) != 1) return fail(openssl_error("tls.key does not match tls.crt"));
  EVP_PKEY* ca_public = X509_get0_pubkey(ca.get());
  if (X509_verify(cert.get(), ca_public) != 1) return fail(openssl_error("tls.crt is not signed by ca.crt"));
  const std::string host = dns_names(options)[2];
  if (X509_check_host(cert.get(), host.c_str(), host.size(), 0, nullptr) != 1)
    return fail(fmt::format("tls.crt is not valid for {}", host));
  for (const auto& ip : options.ip_addresses)
    if (X509_check_ip_asc(cert.get(), ip.c_str(), 0) != 1) return fail(fmt::format("tls.crt is not valid for {}", ip));
  time_t horizon = std::chrono::system_clock::to_time_t(now + lookahead);
  for (auto [what, c] : {std::pair<const char*, X509*>{"ca.crt", ca.get()}, {"tls.crt", cert.get()}}) {
    if (X509_cmp_time(X509_get0_notAfter(c), &horizon) <= 0)
      return fail(fmt::format("{} expires within {} s", what, lookahead.count()));
  }
  return {};
}

}  // namespace unitrain::webhook
