// The enabled frameworks as the operator runs them: each module's plugin is built once, with the
// whole configuration the flags give it (options, gang scheduler, cluster domain), and runs in
// its JobController, with an event recorder of its own. Every controller reads the same
// process-wide caches (caches(): one informer per resource, which the operator starts as one
// runnable on every replica). The webhook server borrows the same plugin objects (plugins()), so
// admission and reconciliation can never see two configurations.
// Each controller's API calls are reported to the FaultLog under its controller name, the
// caches' under kCachesSource (a controller's /readyz line names why its caches do not sync),
// and the FaultLog learns which CRDs the enabled frameworks and the gang scheduler need and how
// to install them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cmd/training-operator/flags.h"
#include "core/base/passkey.h"
#include "core/base/result.h"
#include "core/controller/child_caches.h"
#include "core/controller/finalizer_release.h"
#include "core/controller/job_controller.h"
#include "core/framework/plugin.h"
#include "core/framework/registry.h"
#include "core/kube/client.h"
#include "core/kube/clock.h"
#include "core/kube/event_recorder.h"
#include "core/kube/fault_log.h"

namespace unitrain::operator_cmd {

// The file in manifests/crds that holds a framework's CRD: "<group>_<plural>.yaml", or for one
// version of a kind several modules serve, "<group>_<plural>_<version>.yaml".
std::string crd_file_name(const framework::FrameworkDescriptor& d, std::string_view version);

class Controllers {
 public:
  // The FaultLog source of the informers' lists and watches.
  static constexpr const char* kCachesSource = "informer-caches";

  struct Framework {
    std::string name;                           // canonical, "kubeflow.org/pytorchjob"
    std::string controller_name;                // "pytorchjob-controller"
    const framework::FrameworkPlugin* plugin;   // owned by `controller`
    std::unique_ptr<kube::Client> client;       // the shared client, reporting as this controller
    std::unique_ptr<kube::EventRecorder> recorder;
    std::unique_ptr<controller::EventSink> events;  // `recorder` as the controller's sink
    std::unique_ptr<controller::JobController> controller;
  };

  // One Framework per enabled name (flags.enabled), in that order. Events are written through
  // `events_client` (its own rate limit).
  static Result<std::unique_ptr<Controllers>> create(const framework::Registry& registry, const Flags& flags,
                                                     kube::Client& client, kube::Client& events_client,
                                                     kube::Clock& clock, kube::FaultLog& faults);

  std::vector<Framework>& all() { return frameworks_; }
  // One per companion kind of an enabled module that has finalizers to release
  // (framework::CompanionKind::released_finalizers; cluster-scoped kinds only when every
  // namespace is watched); the leader runs them.
  std::vector<std::unique_ptr<controller::FinalizerRelease>>& finalizer_releases() { return finalizer_releases_; }
  controller::SharedCaches& caches() { return *caches_; }
  // The plugins for the webhook server: valid as long as this object lives.
  std::vector<const framework::FrameworkPlugin*> plugins() const;

  // Only create() can make the key; public so std::make_unique can call it.
  explicit Controllers(PassKey<Controllers>) {}

 private:
  std::unique_ptr<kube::Client> caches_client_;      // the shared client, reporting as kCachesSource
  std::unique_ptr<controller::SharedCaches> caches_;  // outlives the controllers attached to it
  std::vector<Framework> frameworks_;
  std::vector<std::unique_ptr<kube::Client>> release_clients_;  // the shared client, reporting per release
  std::vector<std::unique_ptr<controller::FinalizerRelease>> finalizer_releases_;
};

}  // namespace unitrain::operator_cmd
