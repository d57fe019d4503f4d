#include "core/ssh/ssh_key.h"

#include <cstdint>
#include <memory>

#include <openssl/core_names.h>
#include <openssl/encoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "core/base/base64.h"

namespace unitrain::ssh {
namespace {

std::string openssl_error(std::string_view what) {
  unsigned long code = ERR_get_error();
  char buf[256] = {0};
  if (code != 0) ERR_error_string_n(code, buf, sizeof buf);
  ERR_clear_error();
  return std::string("ssh key: ") + std::string(what) + (code != 0 ? std::string(": ") + buf : std::string());
}

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct EncoderFree {
  void operator()(OSSL_ENCODER_CTX* p) const { OSSL_ENCODER_CTX_free(p); }
};

// RFC 4251 "string": uint32 big-endian length, then the bytes.
void put_string(std::string& out, std::string_view bytes) {
  const auto n = static_cast<uint32_t>(bytes.size());
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out.append(bytes);
}

}  // namespace

Result<SshKeyPair> generate_ssh_key() {
  std::unique_ptr<EVP_PKEY, PkeyFree> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-521"));
  if (!key) return fail(openssl_error("generating an EC P-521 key"));

  // "type-specific" output structure of an EC key pair is SEC1 (RFC 5915), PEM "EC PRIVATE KEY".
  std::unique_ptr<OSSL_ENCODER_CTX, EncoderFree> enc(
      OSSL_ENCODER_CTX_new_for_pkey(key.get(), EVP_PKEY_KEYPAIR, "PEM", "type-specific", nullptr));
  if (!enc || OSSL_ENCODER_CTX_get_num_encoders(enc.get()) == 0) return fail(openssl_error("no SEC1 PEM encoder"));
  unsigned char* data = nullptr;
  size_t len = 0;
  if (OSSL_ENCODER_to_data(enc.get(), &data, &len) != 1) return fail(openssl_error("encoding the private key"));
  SshKeyPair pair;
  pair.private_key_pem.assign(reinterpret_cast<const char*>(data), len);
  OPENSSL_free(data);

  size_t point_len = 0;
  if (EVP_PKEY_get_octet_string_param(key.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, nullptr, 0, &point_len) != 1) {
    return fail(openssl_error("reading the public point size"));
  }
  std::string point(point_len, '\0');
  if (EVP_PKEY_get_octet_string_param(key.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY,
                                      reinterpret_cast<unsigned char*>(point.data()), point.size(), &point_len) != 1) {
    return fail(openssl_error("reading the public point"));
  }
  point.resize(point_len);
  // RFC 5656 public key blob: key type, curve identifier, uncompressed point Q.
  std::string blob;
  put_string(blob, "ecdsa-sha2-nistp521");
  put_string(blob, "nistp521");
  put_string(blob, point);
  pair.authorized_key = "ecdsa-sha2-nistp521 " + base64_encode(blob) + "\n";
  return pair;
}

}  // namespace unitrain::ssh
