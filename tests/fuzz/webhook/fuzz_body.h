// One fuzz iteration over the webhook endpoints (AdmissionReview and ConversionReview handling of
// every framework), shared by the libFuzzer target and the Catch2 replay test. The first input
// byte picks the endpoint; with its top bit set the rest is the object of a well-formed review
// (so the frameworks' defaulting and validation are reached), otherwise the whole request body.
// It aborts (__builtin_trap) only when an invariant breaks: every answer is a well-formed review
// (or an HTTP 400 for a conversion body with no request), and an admission is allowed only for a
// review that parses as one for that endpoint.
#pragma once

#include <cstddef>
#include <cstdint>

namespace unitrain::fuzz {

// What the endpoint answered, for the replay test to see which paths its inputs reach.
enum class WebhookAnswer {
  None,                  // empty input
  Allowed,               // admission allowed
  Denied,                // admission refused by a framework's validation (422 Invalid)
  Refused,               // a malformed AdmissionReview refused (400 BadRequest)
  Converted,             // ConversionReview Success
  ConversionFailed,      // ConversionReview Failure
  ConversionBadRequest,  // HTTP 400: no conversion request to answer
  NotFound,              // no endpoint at that path
};

WebhookAnswer webhook_one_input(const uint8_t* data, size_t size);

}  // namespace unitrain::fuzz
