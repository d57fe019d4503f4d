#include <fmt/format.h>

#include "core/kube/client.h"

namespace unitrain::kube {
namespace {

const char* reason_name(ApiError::Reason r) {
  using R = ApiError::Reason;
  switch (r) {
    case R::Unknown: return "Unknown";
    case R::NotFound: return "NotFound";
    case R::AlreadyExists: return "AlreadyExists";
    case R::Conflict: return "Conflict";
    case R::Invalid: return "Invalid";
    case R::Forbidden: return "Forbidden";
    case R::Unauthorized: return "Unauthorized";
    case R::Gone: return "Gone";
    case R::TooManyRequests: return "TooManyRequests";
    case R::Timeout: return "Timeout";
    case R::ServerTimeout: return "ServerTimeout";
    case R::InternalError: return "InternalError";
    case R::BadRequest: return "BadRequest";
    case R::MethodNotAllowed: return "MethodNotAllowed";
    case R::NotAcceptable: return "NotAcceptable";
    case R::UnsupportedMediaType: return "UnsupportedMediaType";
    case R::RequestEntityTooLarge: return "RequestEntityTooLarge";
    case R::ServiceUnavailable: return "ServiceUnavailable";
    case R::Expired: return "Expired";
    case R::Transport: return "Transport";
    case R::BadResponse: return "BadResponse";
    case R::Cancelled: return "Cancelled";
  }
  return "Unknown";
}

}  // namespace

bool ApiError::retryable() const {
  switch (reason) {
    case Reason::Transport:
    case Reason::TooManyRequests:
    case Reason::ServerTimeout:
    case Reason::Timeout:
    case Reason::ServiceUnavailable:
      return true;
    case Reason::Cancelled:
    case Reason::BadResponse:
      return false;
    default:
      break;
  }
  return code == 429 || (code >= 500 && code != 501);
}

std::string ApiError::to_string() const {
  std::string out = reason_name(reason);
  if (code != 0) out += fmt::format(" ({})", code);
  if (!message.empty()) out += ": " + message;
  for (const auto& c : causes) {
    out += fmt::format("; {}", c.field.empty() ? c.message : c.field + ": " + c.message);
  }
  if (retry_after) out += fmt::format(" (retry after {}s)", retry_after->count());
  return out;
}

}  // namespace unitrain::kube
