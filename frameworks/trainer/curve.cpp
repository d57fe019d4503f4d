#include "frameworks/trainer/curve.h"

#include <array>
#include <memory>

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

namespace unitrain::frameworks::trainer {

Result<std::string> z85_encode(std::span<const uint8_t> bytes) {
  static constexpr std::string_view kAlphabet =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  if (bytes.size() % 4 != 0) return fail(fmt::format("Z85: {} bytes is not a multiple of 4", bytes.size()));
  std::string out;
  out.reserve(bytes.size() / 4 * 5);
  for (size_t i = 0; i < bytes.size(); i += 4) {
    uint32_t value = (uint32_t{bytes[i]} << 24) | (uint32_t{bytes[i + 1]} << 16) | (uint32_t{bytes[i + 2]} << 8) |
                     uint32_t{bytes[i + 3]};
    std::array<char, 5> chunk{};
    for (int d = 4; d >= 0; --d) {
      chunk[static_cast<size_t>(d)] = kAlphabet[value % 85];
      value /= 85;
    }
    out.append(chunk.data(), chunk.size());
  }
  return out;
}

Result<CurveKeys> curve_keys_for(std::string_view uid) {
  std::array<uint8_t, SHA256_DIGEST_LENGTH> secret{};
  SHA256(reinterpret_cast<const unsigned char*>(uid.data()), uid.size(), secret.data());
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, secret.data(), secret.size()), &EVP_PKEY_free);
  if (!key) return fail("CURVE key: OpenSSL refused the X25519 private key");
  std::array<uint8_t, 32> public_key{};
  size_t length = public_key.size();
  if (EVP_PKEY_get_raw_public_key(key.get(), public_key.data(), &length) != 1 || length != public_key.size()) {
    return fail("CURVE key: OpenSSL could not derive the X25519 public key");
  }
  auto pub = z85_encode(public_key);
  auto sec = z85_encode(secret);
  if (!pub) return fail(pub.error());
  if (!sec) return fail(sec.error());
  return CurveKeys{std::move(*pub), std::move(*sec)};
}

std::string curve_certificate(const CurveKeys& keys, std::string_view trainjob_name) {
  return fmt::format(
      "#   ZeroMQ CURVE **Secret** Certificate\n"
      "#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.\n"
      "\n"
      "metadata\n"
      "    name = \"{}\"\n"
      "curve\n"
      "    public-key = \"{}\"\n"
      "    secret-key = \"{}\"\n",
      trainjob_name, keys.public_key, keys.secret_key);
}

}  // namespace unitrain::frameworks::trainer
