// The informer caches of the job controllers.
//
// One SharedCaches serves every controller of the process: one informer per resource and
// namespace scope — each enabled framework's jobs, then pods, Services, every kind some module
// owns, PodGroups and PriorityClasses (with gang scheduling). An informer of children lists and
// watches only objects one of the modules could own (child_selection: the union of their child
// label selectors, or their jobs' owner references for a module without one) and keeps only the
// fields the controllers read (core/kube/informer.h). Each change to a child
// is dispatched once, by its controller owner reference, to the controller of that job kind
// (through the owned object for a grandchild: the pods of an MPI launcher Job), which decides
// whether it triggers a reconcile. A module declares what it watches in its descriptor; it never
// starts an informer: the operator starts the SharedCaches as one runnable on every replica.
//
// A ChildCaches is one controller's view: its jobs, their children, the kinds it owns.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/labels.h"
#include "core/api/meta.h"
#include "core/base/passkey.h"
#include "core/base/result.h"
#include "core/framework/descriptor.h"
#include "core/framework/plugin.h"
#include "core/gang/gang.h"
#include "core/kube/client.h"
#include "core/kube/clock.h"
#include "core/kube/informer.h"

namespace unitrain::controller {

inline const kube::GroupVersionResource kPods{"", "v1", "pods"};
inline const kube::GroupVersionResource kServices{"", "v1", "services"};

// What a child cache holds. Pods and Services carry the per-replica-type expectations; the
// other kinds do not.
enum class ChildKind { Pod, Service, Owned, PodGroup };

// One change to a child of a job, as the controller of that job's kind receives it.
struct ChildEvent {
  enum class Change { Added, Updated, Deleted };
  Change change = Change::Added;
  ChildKind kind = ChildKind::Pod;
  const json::Value& object;            // for Deleted, its last state
  // Updated: the state before, only what react() and the dispatch read of it (previous_fields).
  const json::Value* previous = nullptr;
  api::OwnerReference job;              // the job it belongs to
  bool grandchild = false;              // owned by an object the job owns (an MPI launcher Job's pod)
};

// How a job controller answers one change to a child, after the reference operators'
// predicates. A create or delete makes training-operator reconcile only when the child carries
// the replica-type label (which also names the expectation it fulfils); mpi-operator reconciles
// on every one (PipelineDepartures::reconciles_on_any_child). An update makes both reconcile when the
// resourceVersion changed and the job is cached under the owner reference's name and uid
// (`job_cached`). A pod that changed phase, or an owned object whose status changed (an MPI
// launcher Job that finished), changes the job's status: that pass goes first.
struct ChildReaction {
  bool reconcile = false;
  bool status_first = false;
  bool observed = false;  // a create or delete the pods / services expectations count
};
ChildReaction react(const ChildEvent& event, const framework::FrameworkDescriptor& descriptor, bool reconciles_on_any_child,
                    bool job_cached);

class ChildEventSink {
 public:
  virtual ~ChildEventSink() = default;
  // Runs on an informer thread; must not block.
  virtual void child_event(const ChildEvent& event) = 0;
};

// The labels the core puts on every object it creates for a job of `descriptor`, from its
// child_label_selector: an error names the module when the selector is not a plain
// "key=value[,key=value]" (only those can be stamped).
Result<api::Labels> child_labels(const framework::FrameworkDescriptor& descriptor);

// What the shared informer of `resource`, holding children of `kind`, lists, watches and keeps
// for `modules`: the union, over the modules that create or read that kind (core_children for
// pods, Services and PodGroups; owned_resources and optional_owned_resources for the others),
// of each module's child_label_selector — or, for a module without one, of the objects its
// jobs control (their controller reference names its group and kind); a module without one
// that owns other kinds needs all pods, since the pods of its owned objects are controlled by
// those. nullopt: no module reads the kind, so no informer is needed.
std::optional<kube::Selection> child_selection(const std::vector<const framework::FrameworkDescriptor*>& modules,
                                               ChildKind kind, const kube::GroupVersionResource& resource);

// What a ChildEvent's `previous` holds of a child of `kind`: metadata.namespace,
// resourceVersion and ownerReferences; a pod's status.phase, an owned object's status.
std::shared_ptr<const json::FieldMask> previous_fields(ChildKind kind);

class ChildCaches;

class SharedCaches {
 public:
  // Watches for `modules` (all the process will run) in `namespaces` (empty: all). `gang` null,
  // or no module reading pods: no PodGroups and no PriorityClasses.
  SharedCaches(kube::Client& client, kube::Clock& clock, const std::vector<const framework::FrameworkDescriptor*>& modules,
               std::vector<std::string> namespaces, const gang::Backend* gang);
  SharedCaches(const SharedCaches&) = delete;
  SharedCaches& operator=(const SharedCaches&) = delete;
  ~SharedCaches();  // stop()

  // Before start(): the view of the caches for `descriptor`'s controller (one of `modules`),
  // whose children's events go to `sink`.
  std::unique_ptr<ChildCaches> attach(const framework::FrameworkDescriptor& descriptor, ChildEventSink& sink);

  // Starts the informers; an optional owned kind's only when the API server serves it now
  // (one list of at most one object), else the module's unserved_owned_warning is logged.
  void start();
  void stop();
  bool wait_for_sync(std::chrono::steady_clock::time_point deadline) const;
  const std::vector<std::string>& namespaces() const { return namespaces_; }
  // The informer of children of `resource` (pods, Services, an owned kind); null when there is
  // none (no module reads the kind). What the process caches, for tests and tools.
  const kube::Informer* children_informer(const kube::GroupVersionResource& resource) const;

 private:
  friend class ChildCaches;
  struct Route {
    std::string api_version, kind;
    ChildEventSink* sink;
  };
  kube::Informer& make(const kube::GroupVersionResource& resource, kube::Selection selection,
                       std::shared_ptr<const json::FieldMask> fields, bool indexed);
  void watch_children(kube::Informer& informer, ChildKind kind);
  void dispatch(ChildKind kind, ChildEvent::Change change, const json::Value* previous, const json::Value& object);
  ChildEventSink* sink_for(const api::OwnerReference& owner) const;
  // The controller of the owned object `owner` refers to, when it is cached under that uid.
  std::optional<api::OwnerReference> controller_of_owned(const std::string& ns, const api::OwnerReference& owner) const;
  // Whether syncing waits for `informer`: not for an optional owned kind the server did not serve.
  bool awaited(const kube::Informer* informer) const;

  kube::Client& client_;
  kube::Clock& clock_;
  std::vector<std::string> namespaces_;
  std::vector<std::unique_ptr<kube::Informer>> all_;  // every informer below, in start order
  std::map<std::string, kube::Informer*> jobs_;       // by "plural.group/version"
  kube::Informer* pods_ = nullptr;
  kube::Informer* services_ = nullptr;
  std::map<std::string, kube::Informer*> owned_;  // by "resource.group"
  // The informers of optional owned kinds (FrameworkDescriptor::optional_owned_resources), with
  // the warning for an unserved one; `served` is set by start() before it starts them.
  struct OptionalOwned {
    kube::Informer* informer;
    kube::GroupVersionResource resource;
    std::string warning;
    std::atomic<bool> served{false};
  };
  std::vector<std::unique_ptr<OptionalOwned>> optional_owned_;
  kube::Informer* pod_groups_ = nullptr;
  // Cluster-scoped, so only watched when the controllers watch all namespaces (a namespaced
  // Role cannot grant them); without it every template counts with priority 0.
  kube::Informer* priority_classes_ = nullptr;
  std::vector<Route> routes_;
  bool started_ = false;
};

class ChildCaches {
 public:
  // The job informer of this controller.
  kube::Informer& jobs() const { return *jobs_; }
  // The children of the job `uid` in `ns`, and the pods of its owned objects: of the core's
  // kinds, those the module names (FrameworkDescriptor::core_children).
  framework::Observed observe(const std::string& ns, const std::string& uid) const;
  // The cache of pods, services or an owned kind; null for a kind this module does not read.
  const kube::Informer* informer_for(const kube::GroupVersionResource& resource) const;
  // The PodGroup "<ns>/<name>" as cached; null without gang scheduling or when there is none.
  kube::ObjectPtr pod_group(const std::string& ns, const std::string& name) const;
  // The value of the PriorityClass `class_name`; 0 when it is empty, unknown, or not watched.
  int32_t priority_class_value(std::string_view class_name) const;
  // What the core stamps on the objects it creates for these jobs, so the caches select them.
  const api::Labels& child_labels() const { return labels_; }
  // The informers this controller reads have all listed once.
  bool wait_for_sync(std::chrono::steady_clock::time_point deadline) const;

  // Only SharedCaches::attach() can make the key; public so std::make_unique can call it.
  ChildCaches(PassKey<SharedCaches>, const SharedCaches& caches, kube::Informer& jobs, std::vector<std::string> owned,
              api::Labels labels, framework::FrameworkDescriptor::CoreChildren core_children)
      : caches_(caches), jobs_(&jobs), owned_(std::move(owned)), labels_(std::move(labels)), core_children_(core_children) {}

 private:
  const SharedCaches& caches_;
  kube::Informer* jobs_;
  std::vector<std::string> owned_;  // "resource.group" of the kinds this module owns
  api::Labels labels_;
  framework::FrameworkDescriptor::CoreChildren core_children_;  // the core's kinds this module reads
};

}  // namespace unitrain::controller
