// Takes finalizers that nothing sets any more off the objects of one kind: a finalizer an earlier
// release of a reference operator put on its objects (framework::CompanionKind::
// released_finalizers) would otherwise keep every such object from ever being deleted. Watches
// the kind through an informer of its own and merge-patches metadata.finalizers without them,
// retrying failures with the work queue's backoff. Sets nothing.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/kube/client.h"
#include "core/kube/clock.h"
#include "core/kube/informer.h"
#include "core/kube/workqueue.h"
#include "core/log/log.h"

namespace unitrain::controller {

// The merge patch that leaves `object` without any of `finalizers`; empty when it has none of them.
std::string finalizer_release_patch(const json::Value& object, const std::vector<std::string>& finalizers);

class FinalizerRelease {
 public:
  // `namespaces`: empty for all (and for a cluster-scoped kind).
  FinalizerRelease(kube::Client& client, kube::Clock& clock, kube::GroupVersionResource resource,
                   std::vector<std::string> finalizers, std::vector<std::string> namespaces);
  FinalizerRelease(const FinalizerRelease&) = delete;
  FinalizerRelease& operator=(const FinalizerRelease&) = delete;
  ~FinalizerRelease();  // stop()

  const kube::GroupVersionResource& resource() const { return resource_; }
  void start();
  void stop();
  bool wait_for_sync(std::chrono::milliseconds timeout) const { return informer_.wait_for_sync(timeout); }

 private:
  void enqueue_if_held(const json::Value& object);
  void worker_loop();

  kube::Client& client_;
  kube::GroupVersionResource resource_;
  std::vector<std::string> finalizers_;
  kube::Informer informer_;
  kube::WorkQueue queue_;
  std::thread worker_;
  log::Logger log_;
};

}  // namespace unitrain::controller
