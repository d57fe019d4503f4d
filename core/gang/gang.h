// Gang scheduling: the PodGroup a job needs so that its pods are placed all together or not at
// all, for Volcano (scheduling.volcano.sh/v1beta1) and the scheduler-plugins coscheduling
// plugin (scheduling.x-k8s.io/v1alpha1). The core asks the backend for the desired PodGroup,
// writes it only when its spec differs, holds pod creation while the backend says so, and lets
// the backend mark each pod for its scheduler.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/api/quantity.h"
#include "core/base/result.h"
#include "core/json/json.h"
#include "core/kube/client.h"

namespace unitrain::gang {

using ResourceList = std::map<std::string, api::Quantity, std::less<>>;

// Everything that decides a PodGroup; frameworks compute min_member and min_resources with
// their own rules (training-operator and mpi-operator differ) and hand the result here.
struct PodGroupRequest {
  std::string ns;
  std::string name;                     // the job's name
  json::Document annotations;           // Volcano copies the job's annotations; null for none
  json::Document owner_reference;       // the job's controller reference
  int32_t min_member = 0;
  std::string queue;                    // Volcano; see default_queue
  // training-operator's rule: an empty queue keeps an existing group's queue, else "default".
  // Without it (mpi-operator) an empty queue is left out of the spec.
  bool default_queue = true;
  std::string priority_class;           // Volcano
  std::optional<ResourceList> min_resources;
  std::optional<int32_t> schedule_timeout_seconds;  // scheduler-plugins
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;            // "volcano" | "scheduler-plugins"
  virtual const std::string& scheduler_name() const = 0;  // what pods' schedulerName becomes
  virtual kube::GroupVersionResource resource() const = 0;

  // The PodGroup to create, or whose spec to apply to `existing` (may be null).
  virtual json::Document desired(const PodGroupRequest& request, const json::Value* existing) const = 0;
  // True when `existing`'s spec differs from `desired`'s (compared semantically: "1Gi" == "1024Mi").
  virtual bool spec_differs(const json::Value& existing, const json::Value& desired) const = 0;
  // Volcano holds pod creation until its PodGroup leaves Pending; scheduler-plugins never does.
  virtual bool admits_pod_creation(const json::Value* existing) const = 0;

  // The two reference operators mark pods differently: training-operator fills schedulerName
  // only when the template left it empty and adds Volcano's task-spec annotation;
  // mpi-operator always sets schedulerName and adds only the group annotation.
  struct DecorateOptions {
    bool force_scheduler_name = false;
    bool volcano_task_spec = true;
  };
  struct PodDecoration {
    // The template named another scheduler: training-operator keeps it and warns
    // (SetPodTemplateSchedulerName); mpi-operator replaces it and logs.
    bool template_scheduler_differs = false;
  };
  // Sets schedulerName and the group annotation (Volcano) or label (scheduler-plugins).
  virtual PodDecoration decorate_pod(json::Document& pod, std::string_view group_name,
                                     std::string_view replica_type_lower, const DecorateOptions& options) const = 0;
};

// `--gang-scheduler-name`: "" → none (nullptr), "volcano" (any case) → Volcano, any other
// value → scheduler-plugins with that scheduler name.
std::unique_ptr<Backend> make_backend(std::string_view gang_scheduler_name);

// One replica type's contribution to minResources.
struct ReplicaResources {
  std::string replica_type;
  int32_t replicas = 0;
  int32_t priority = 0;          // value of the template's PriorityClass (0 when unknown)
  const json::Value* pod_spec = nullptr;  // the template's spec
};

// The training-operator rule: visit replica types by priority (highest first; ties keep the
// given order), take pods until `min_member` are counted, and sum each pod's container
// requests (limits where a container has no requests). Errors name the bad quantity's field.
Result<ResourceList> min_resources(std::vector<ReplicaResources> replicas, int32_t min_member);
// Where a container's requests come from when it lacks some.
enum class MissingRequests {
  LimitsWhenNone,      // training-operator: a container without requests counts its limits
  LimitsPerResource,   // mpi-operator: each resource limited but not requested counts its limit
};
// Σ requests of a pod spec's containers, init containers excluded, limits filling in per `rule`.
Result<ResourceList> pod_requests(const json::Value& pod_spec,
                                  MissingRequests rule = MissingRequests::LimitsWhenNone);

// {"cpu":"1500m","memory":"1Gi"} in canonical quantity form.
json::Document to_json(const ResourceList& resources);
// The inverse; errors name the key ("minResources.cpu: quantity \"x\": ...").
Result<ResourceList> resource_list_from_json(const json::Value& v, std::string_view field);

}  // namespace unitrain::gang
