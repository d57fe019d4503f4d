// The informer caches of a controller's job children: the framework's pods (selected by the
// operator-name label), services, the other kinds the framework owns, PodGroups (gang
// scheduling) and PriorityClasses (minResources ordering). Each cache knows which kind it
// serves, so the handlers the controller attaches are told the kind instead of guessing it.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/meta.h"
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

class ChildCaches {
 public:
  // `gang` null: no PodGroups and no PriorityClasses are watched.
  ChildCaches(kube::Client& client, kube::Clock& clock, const framework::FrameworkDescriptor& descriptor,
              const std::vector<std::string>& namespaces, const gang::Backend* gang);
  ChildCaches(const ChildCaches&) = delete;
  ChildCaches& operator=(const ChildCaches&) = delete;

  // `handlers_for(kind)` once per cache, before start().
  void add_handlers(const std::function<kube::EventHandlers(ChildKind)>& handlers_for);
  void start();
  void stop();
  bool wait_for_sync(std::chrono::steady_clock::time_point deadline) const;

  // The children of the job `uid` in `ns`, and the pods of its owned objects.
  framework::Observed observe(const std::string& ns, const std::string& uid) const;
  // The cache of pods, services or an owned kind; null for a kind nobody watches.
  const kube::Informer* informer_for(const kube::GroupVersionResource& resource) const;
  // The PodGroup "<ns>/<name>" as cached; null without gang scheduling or when there is none.
  kube::ObjectPtr pod_group(const std::string& ns, const std::string& name) const;
  // The value of the PriorityClass `class_name`; 0 when it is empty, unknown, or not watched.
  int32_t priority_class_value(std::string_view class_name) const;
  // The controller of the owned object `owner` refers to (the MPIJob of a launcher Job whose pod
  // changed), when that object is cached under this uid.
  std::optional<api::OwnerReference> controller_of_owned(const std::string& ns, const api::OwnerReference& owner) const;

 private:
  std::unique_ptr<kube::Informer> pods_;
  std::unique_ptr<kube::Informer> services_;
  std::map<std::string, std::unique_ptr<kube::Informer>> owned_;  // by "resource.group"
  std::unique_ptr<kube::Informer> pod_groups_;
  // Cluster-scoped, so only watched when the controller watches all namespaces (a namespaced
  // Role cannot grant them); without it every template counts with priority 0.
  std::unique_ptr<kube::Informer> priority_classes_;
};

}  // namespace unitrain::controller
