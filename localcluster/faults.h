// Fault injection for the local cluster's API server, so client and operator tests can see the
// failures a real cluster produces: 500, 429 (with Retry-After) and 409 responses, latency,
// connections dropped before or after the write, truncated JSON bodies, watch streams cut after
// N events and watches refused with 410 Expired when they resume from a resourceVersion.
//
// The configuration is JSON (the `--faults` flag, `PUT /unitrain/faults`, or
// LocalClusterOptions::faults); every random choice comes from one generator seeded by `seed`,
// so a single-threaded request sequence always gets the same faults. Injected failures happen
// before the store is called (no side effect), except `dropAfterCommit`.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "localcluster/store.h"

namespace unitrain::localcluster {

// One rule: which requests it matches and what it does to them. Probabilities are in [0, 1];
// the error kinds of one rule are exclusive (one roll decides among them).
struct FaultRule {
  // Metrics verbs: GET LIST WATCH POST PUT PATCH APPLY DELETE DELETECOLLECTION; "write" stands
  // for every mutating verb. Empty: every verb.
  std::vector<std::string> verbs;
  // "pods" matches pods and every pods subresource, "pods/status" only that subresource.
  // Empty: every resource.
  std::vector<std::string> resources;
  double error500 = 0;
  double error429 = 0;
  double error409 = 0;
  int retry_after_seconds = 1;  // sent with 429 as the Retry-After header and retryAfterSeconds
  double drop = 0;              // close the connection without a response, before the store call
  double drop_after_commit = 0; // run the call, then close the connection without a response
  // A 2xx body cut in half; for WATCH, each event line replaced, with this probability, by one
  // whose braces balance but whose JSON is invalid.
  double malformed = 0;
  std::chrono::milliseconds latency{0};  // added to every matching request
  int64_t times = 0;            // faults this rule injects before it turns itself off; 0: no limit
};

struct FaultConfig {
  uint64_t seed = 1;
  std::vector<FaultRule> rules;  // the first rule matching a request applies
  int64_t watch_cut_after_events = 0;  // end each watch stream after this many events; 0: never
  bool watch_cut_abort = false;        // end it by closing the connection instead of cleanly
  int64_t watch_expire_resumes = 0;    // the next N watches from a resourceVersion get 410
  double watch_expire_probability = 0; // and this share of the later ones

  // Parses the JSON form (documented in localcluster/README.md). Unknown keys are errors naming
  // the key, so a typo does not silently inject nothing.
  static Result<FaultConfig> parse(std::string_view json_text);
  std::string to_json() const;
};

// What to do with one request.
struct FaultDecision {
  enum class Action { None, Error, Drop, DropAfterCommit, Malformed };
  Action action = Action::None;
  std::chrono::milliseconds latency{0};
  std::optional<StatusError> error;
  std::optional<int> retry_after_seconds;  // for the Retry-After header
  bool malformed_watch = false;  // WATCH: corrupt event lines with `malformed_probability`
  double malformed_probability = 0;
};

class FaultInjector {
 public:
  FaultInjector() = default;
  explicit FaultInjector(FaultConfig config);

  void configure(FaultConfig config);
  FaultConfig config() const;
  // The configuration and the counts of injected faults by kind, as JSON.
  std::string describe() const;
  bool active() const;

  FaultDecision decide(std::string_view verb, const ResourceInfo& r, std::string_view subresource,
                       std::string_view name);
  // For a watch request: whether it is refused with 410 Expired (only when it resumes from a
  // resourceVersion other than "" and "0").
  bool expire_watch(std::string_view resource_version);
  int64_t watch_cut_after_events() const;
  bool watch_cut_abort() const;
  bool roll(double probability);
  // Counts one injected fault of `kind` ("500", "429", "409", "drop", "dropAfterCommit",
  // "malformed", "watchCut", "watchExpired").
  void count(const std::string& kind);
  std::map<std::string, uint64_t> counts() const;

 private:
  mutable std::mutex mu_;
  FaultConfig config_;
  std::vector<int64_t> remaining_;  // per rule, for `times`
  std::mt19937_64 rng_{1};
  std::map<std::string, uint64_t> counts_;
};

}  // namespace unitrain::localcluster
