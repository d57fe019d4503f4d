// Expectations: what the controller has asked the API server to create or delete and not yet
// seen in its informer cache. A reconcile that acts while its own writes are still in flight
// would create a pod twice; it waits until the cache has caught up instead, or until the
// expectation expires (a lost watch event must not wedge a job forever).
//
// Keys follow training-operator: "<ns>/<job>/<rt>/pods" and "<ns>/<job>/<rt>/services".
//
// The job object itself is a write target too (status, the restart-count annotation): its
// expected version is the resourceVersion our last write returned, keyed "<ns>/<job>/job". A pass
// over a cached job older than that would act on a state we already replaced (a restart count
// not yet raised, a job not yet failed) while the pod cache may already show the consequences of
// our write, and so create pods again.
//
// The opposite gap needs a marker too: a child of a job deleted while no deletion of ours was
// outstanding (a user, the garbage collector). The children's informer may be ahead of the jobs
// informer (each re-lists after its own back-off when the API server restarts): the garbage
// collector's deletes of a deleted job's pods can reach the controller while its cache still
// holds the job. A job so marked is confirmed on the server before a pass creates children for
// it (confirm_job_live, reconcile_pass.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "core/kube/clock.h"

namespace unitrain::controller {

class Expectations {
 public:
  static constexpr std::chrono::minutes kTimeout{5};

  explicit Expectations(const kube::Clock& clock) : clock_(clock) {}

  // Replaces whatever was expected under `key`.
  void set(std::string_view key, int64_t adds, int64_t deletes);
  void expect_creations(std::string_view key, int64_t n) { raise(key, n, 0); }
  void expect_deletions(std::string_view key, int64_t n) { raise(key, 0, n); }
  // An informer saw one of our creations / deletions (or a create call failed, so none will come).
  // True when one was outstanding under `key`: the object was ours to create / delete.
  bool creation_observed(std::string_view key) { return lower(key, 1, 0); }
  bool deletion_observed(std::string_view key) { return lower(key, 0, 1); }

  // A child of the job (`job_key`) went away with no deletion of ours outstanding.
  void children_vanished(std::string_view job_key);
  bool vanished(std::string_view job_key) const;
  // The job was confirmed live on the server since (or it finished: no pass creates children).
  void clear_vanished(std::string_view job_key);

  // True when nothing is outstanding under `key`, nothing was ever recorded, or the record is
  // older than kTimeout.
  bool satisfied(std::string_view key) const;
  void forget(std::string_view key);
  // Removes every key that starts with `prefix` (all keys of a deleted job: "<ns>/<job>/"),
  // vanished markers included.
  void forget_prefix(std::string_view prefix);

  // Our own write to the job returned `resource_version`.
  void expect_version(std::string_view key, std::string_view resource_version);
  // True when the cached job at `resource_version` includes our last write to it (or we never
  // wrote it, or the record is older than kTimeout). Clears the record once caught up.
  bool version_seen(std::string_view key, std::string_view resource_version);

  struct Pending {
    int64_t adds = 0;
    int64_t deletes = 0;
  };
  Pending pending(std::string_view key) const;
  // Records held: expectations not yet fulfilled, job versions not yet seen, and jobs whose
  // children vanished. A fulfilled expectation and a seen version are dropped at once.
  size_t size() const;

  static std::string pods_key(std::string_view ns, std::string_view job, std::string_view replica_type_lower);
  static std::string services_key(std::string_view ns, std::string_view job, std::string_view replica_type_lower);
  static std::string job_key(std::string_view ns, std::string_view job);

 private:
  struct Record {
    int64_t adds = 0;
    int64_t deletes = 0;
    kube::Clock::SteadyTime recorded;
  };
  struct Version {
    std::string resource_version;
    kube::Clock::SteadyTime recorded;
  };
  void raise(std::string_view key, int64_t adds, int64_t deletes);
  bool lower(std::string_view key, int64_t adds, int64_t deletes);

  const kube::Clock& clock_;
  mutable std::mutex mu_;
  std::map<std::string, Record, std::less<>> records_;
  std::map<std::string, Version, std::less<>> versions_;
  std::set<std::string, std::less<>> vanished_;  // job keys
};

}  // namespace unitrain::controller
