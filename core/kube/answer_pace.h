// How long an API server takes to answer a pipelined exchange, learned per target, so that the
// thread waiting for the answers sleeps once through that time and then reads them together.
//
// A server answers pipelined requests one at a time, each as soon as it is handled (kube-apiserver
// over HTTP/1.1, like Go's net/http, flushes every response; so does the local cluster). A reader
// that waits on the socket wakes once per answer: a burst of 16 Events was 16 wake-ups of the
// recorder, a pass's 4 pods 4 of the worker. In a virtual machine a wake-up costs more than the
// answer's parse. The exchange's answers are not needed before the last one anyway (the caller
// settles them together), so the reader sleeps about as long as the server took for the same
// kind of exchange before, then reads what came, and waits on the socket only for what did not.
//
// The estimate: a request's share of the time from the end of the write to the last answer read.
// An exchange whose answers were all there when the reader woke says only that the hold was long
// enough, so the estimate shrinks by an eighth (it probes for a shorter hold); one that still
// waited after its hold measured the server's time, and the estimate moves halfway to it. Bounded
// so that an outlier (a slow server, a loaded machine) adds at most `kMaxHold` to an exchange.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace unitrain::kube {

class AnswerPace {
 public:
  using Duration = std::chrono::nanoseconds;

  static constexpr Duration kMaxPerRequest = std::chrono::milliseconds(2);
  static constexpr Duration kMaxHold = std::chrono::milliseconds(10);
  // Keys remembered; past it the table starts again (a client writes to a handful).
  static constexpr size_t kMaxTargets = 64;

  // How long a reader with `answers_left` answers still to come sleeps before waiting on the
  // socket, at `per_request` each: zero for the last answer (one wake-up either way).
  static Duration hold(Duration per_request, size_t answers_left);

  // An exchange of `n` requests to `target` read its last answer `took` after its write ended.
  // `short_hold`: it slept more than once (or without a hold), so `took` is the server's time;
  // otherwise the hold was long enough, or nothing was waited for.
  void observe(std::string_view target, size_t n, Duration took, bool short_hold);

  // What the estimates are kept by: the target without its namespace's name (a server takes about
  // as long for a pod in any namespace) and without a query.
  static std::string key_of(std::string_view target);

  // The estimate for one answer of an exchange to `target`; zero if none was seen.
  Duration per_request(std::string_view target) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, Duration> per_request_;
};

}  // namespace unitrain::kube
