// The ZeroMQ CURVE certificate of a Flux TrainJob's brokers: one X25519 key pair every broker of
// the job shares, derived from the TrainJob's UID so each pass (and each replica) derives the
// same one without storing a key anywhere but the Secret it writes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/base/result.h"

namespace unitrain::frameworks::trainer {

// ZeroMQ's Z85 (RFC 32/Z85): 4 bytes -> 5 characters; the input length must be a multiple of 4.
Result<std::string> z85_encode(std::span<const uint8_t> bytes);

struct CurveKeys {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters
};
// The secret key is SHA-256(uid) used as an X25519 private key; the public key is derived from it.
Result<CurveKeys> curve_keys_for(std::string_view uid);

// The certificate text (zcert's format: a `curve` section with both keys) brokers read with
// `curve_cert`.
std::string curve_certificate(const CurveKeys& keys, std::string_view trainjob_name);

}  // namespace unitrain::frameworks::trainer
