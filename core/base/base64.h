// Base64 (RFC 4648): how Kubernetes carries bytes in JSON and YAML (Secret data, caBundle,
// admission patches, kubeconfig *-data fields, SSH public keys) and, in its URL-safe alphabet
// without padding, how kube-apiserver encodes list continue tokens.
#pragma once

#include <string>
#include <string_view>

#include "core/base/result.h"

namespace unitrain {

enum class Base64Alphabet {
  Standard,  // RFC 4648 section 4: A-Z a-z 0-9 + /
  Url,       // RFC 4648 section 5: A-Z a-z 0-9 - _
};

enum class Base64Padding { Padded, Unpadded };

std::string base64_encode(std::string_view bytes, Base64Alphabet alphabet = Base64Alphabet::Standard,
                          Base64Padding padding = Base64Padding::Padded);

// Decodes `text` in either padding style. Line breaks, spaces and tabs are skipped (PEM-wrapped or
// YAML-folded values). Only the canonical encoding is accepted: a character outside the alphabet,
// '=' that does not complete the last group, anything after the padding, a last group of a single
// character and non-zero unused bits in the last character are errors naming the byte offset
// (from 0) in `text`.
Result<std::string> base64_decode(std::string_view text, Base64Alphabet alphabet = Base64Alphabet::Standard);

}  // namespace unitrain
