// The local cluster's garbage collector: the ownerReferences graph over every served resource
// (core events excepted: they never own anything and are the highest-volume writes), kept from
// Store watches, and the three propagation policies:
//   background  the owner is gone: dependents whose owners are all gone are deleted;
//               references to owners that are gone are removed while another owner remains.
//   foreground  the owner carries the foregroundDeletion finalizer and a deletionTimestamp: its
//               dependents are deleted (those with blockOwnerDeletion in foreground mode themselves),
//               and once no blocking dependent is left the finalizer is removed.
//   orphan      the owner carries the orphan finalizer and a deletionTimestamp: references to it
//               are removed from its dependents, then the finalizer.
// An owner missing from the graph is confirmed with a live get (by uid) before anything is
// deleted, so watch lag between resources never collects a live object's dependents. The
// start-up list doubles as the scan for dependents orphaned while nothing was running.
// CRD-defined resources join when their CRD is served.
#pragma once

#include <memory>

#include "localcluster/store.h"

namespace unitrain::localcluster::controllers {

class GarbageCollector {
 public:
  explicit GarbageCollector(Store& store);
  ~GarbageCollector();
  GarbageCollector(const GarbageCollector&) = delete;
  GarbageCollector& operator=(const GarbageCollector&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace unitrain::localcluster::controllers
