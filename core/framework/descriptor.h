// What a framework is, as plain data: the core reads these facts to watch, list, name and label
// a framework's objects without knowing the framework. Identity only: where a kind behaves
// differently from the core's default pipeline, its plugin says so through an optional
// capability (core/framework/plugin.h), not through a field here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/framework/job_labels.h"
#include "core/kube/resource.h"

namespace unitrain::framework {

struct FrameworkDescriptor {
  // Canonical name: "<group>/<kind lower>" and, where two modules serve one kind, "@<version>":
  // "kubeflow.org/pytorchjob", "kubeflow.org/mpijob@v1", "kubeflow.org/mpijob@v2beta1".
  std::string name;
  // Further names `--enable-scheme` accepts, compared case-insensitively ("pytorchjob",
  // "mpijob-v2"). The kind itself ("PyTorchJob") is always accepted unless two modules share it;
  // then `kind_alias_default` says which of them the bare kind means (the version the reference
  // operator that introduced the kind serves: MPIJob is kubeflow.org/v1 in training-operator).
  std::vector<std::string> aliases;
  bool kind_alias_default = true;

  std::string group;     // "kubeflow.org"
  std::string version;   // "v1"
  std::string kind;      // "PyTorchJob"
  std::string plural;    // "pytorchjobs"
  std::string singular;  // "pytorchjob"

  // JSON key under .spec holding map<replica type, ReplicaSpec> ("pytorchReplicaSpecs").
  std::string replica_specs_field;
  // Canonical replica types, in the order the core visits them ("Master", "Worker").
  std::vector<std::string> replica_types;

  // The container whose exit code decides restarts and whose ports become service ports.
  std::string default_container;  // "pytorch"
  std::string default_port_name;  // "pytorchjob-port"
  int32_t default_port = 0;       // 23456; 0 when the framework has no default port

  // Value of the training.kubeflow.org/operator-name label on pods ("pytorchjob-controller").
  std::string controller_name;
  // Label that tells a pod's replica type; its value is the lower-cased type.
  // training-operator uses training.kubeflow.org/replica-type, mpi-operator v2 .../job-role.
  std::string replica_type_label = std::string(job_labels::kReplicaType);
  // The `framework` label of the training_operator_* metrics ("pytorch").
  std::string metrics_framework;

  // spec.runPolicy.managedBy values this module answers to; a job with any other non-empty
  // value is left alone (no writes at all). An unset managedBy is ours when `owns_unset`.
  std::vector<std::string> managed_by;
  bool owns_unset_managed_by = true;

  // Kinds the core watches for this framework and cleans up with it, beyond pods and services.
  std::vector<kube::GroupVersionResource> owned_resources;
  // Owned kinds whose CRDs may be absent (a scheduler's PodGroup): watched like owned_resources
  // when the API server serves them as the caches start, else `unserved_owned_warning` is logged
  // (once per kind, with the kind) and the module goes without their events and cached objects.
  std::vector<kube::GroupVersionResource> optional_owned_resources;
  std::string unserved_owned_warning;

  // A label selector every object the module's jobs own matches: its pods, Services and owned
  // kinds ("training.kubeflow.org/operator-name=pytorchjob-controller"). The process-wide caches
  // list and watch only objects that match one enabled module's selector, and the core puts
  // these labels on every object it creates for a job, so plain "key=value[,key=value]" only.
  // Empty: the objects the module's jobs control are kept by their controller owner reference
  // (its group and kind, any version) instead; the API server cannot filter on that, so every
  // object of those kinds is then received and the ones nobody could own are dropped before
  // they are cached.
  std::string child_label_selector;
  // Which of the core's child kinds the module's jobs create or read: pods (its own, and the
  // pods of its owned objects, Observed::owned["pods/<resource>"]) and Services. The shared pods
  // and Services informers select for the modules that name them only, and a module observes
  // only these, so one whose jobs have no pods (JobSet: its batch Jobs' pods are the Job
  // controller's) does not widen what the pods informer lists. Only a WorkloadPlanner may leave
  // out pods: the core's pod pipeline creates them. Default: both, what a module built before
  // this field existed gets.
  struct CoreChildren {
    bool pods = true;
    bool services = true;
  };
  CoreChildren core_children;
  kube::GroupVersionResource resource() const { return {group, version, plural}; }
  std::string api_version() const { return group + "/" + version; }
};

// The descriptor every kubeflow.org/v1 training-operator kind shares: name
// "kubeflow.org/<kind lower>", aliases "<kind lower>" and the metrics framework ("pytorch"),
// plural "<kind lower>s", controller "<kind lower>-controller" (children selected by its
// operator-name label), managedBy training-operator.
FrameworkDescriptor kubeflow_v1_descriptor(std::string_view kind, std::string_view replica_specs_field,
                                           std::vector<std::string> replica_types, std::string_view container,
                                           std::string_view port_name, int32_t port, std::string_view metrics_framework);

}  // namespace unitrain::framework
