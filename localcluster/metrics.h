// Request counters in kube-apiserver's exposition format, so tests and benchmarks that count an
// operator's API writes read the same series they would read from a real cluster.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

namespace unitrain::localcluster {

// One series of apiserver_request_total. `verb` uses kube-apiserver's spelling: GET, LIST, WATCH,
// POST, PUT, PATCH, APPLY, DELETE, DELETECOLLECTION, CONNECT.
struct RequestKey {
  std::string verb;
  std::string group;
  std::string version;
  std::string resource;
  std::string subresource;
  int code = 0;
  friend auto operator<=>(const RequestKey&, const RequestKey&) = default;
};

class RequestMetrics {
 public:
  void record(RequestKey key);
  // Sum over the series whose verb matches (e.g. every POST), for tests.
  uint64_t count(std::string_view verb) const;
  // The Prometheus text exposition (version 0.0.4).
  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::map<RequestKey, uint64_t> counts_;
};

}  // namespace unitrain::localcluster
