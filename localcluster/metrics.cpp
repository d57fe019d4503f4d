#include "localcluster/metrics.h"

#include <fmt/format.h>

namespace unitrain::localcluster {
namespace {

// Prometheus label values escape backslash, double quote and newline.
std::string escape_label(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void RequestMetrics::record(RequestKey key) {
  std::lock_guard lock(mu_);
  ++counts_[std::move(key)];
}

uint64_t RequestMetrics::count(std::string_view verb) const {
  std::lock_guard lock(mu_);
  uint64_t total = 0;
  for (const auto& [k, n] : counts_) {
    if (k.verb == verb) total += n;
  }
  return total;
}

std::string RequestMetrics::render() const {
  std::string out =
      "# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, dry run value, "
      "group, version, resource, scope, component, and HTTP response code.\n"
      "# TYPE apiserver_request_total counter\n";
  std::lock_guard lock(mu_);
  for (const auto& [k, n] : counts_) {
    out += fmt::format(
        "apiserver_request_total{{code=\"{}\",component=\"apiserver\",group=\"{}\",resource=\"{}\","
        "subresource=\"{}\",verb=\"{}\",version=\"{}\"}} {}\n",
        k.code, escape_label(k.group), escape_label(k.resource), escape_label(k.subresource), escape_label(k.verb),
        escape_label(k.version), n);
  }
  return out;
}

}  // namespace unitrain::localcluster
