// core/v1 Events as Kubernetes' components record them (`kubectl describe` and `kubectl get
// events` show them): one Event per occurrence, named "<object>.<unique hex>", with the involved
// object's reference, the reporting component and host, count 1 and both timestamps set.
#pragma once

#include <string_view>

#include "core/json/json.h"
#include "localcluster/store.h"

namespace unitrain::localcluster::controllers {

struct EventSource {
  std::string_view component;  // "kubelet", "default-scheduler", "deployment-controller", ...
  std::string_view host;       // the node for the kubelet, else empty
};

// `involved` is the object (apiVersion, kind, metadata); `field_path` names a container as
// "spec.containers{name}" or is empty. Failures are ignored: events are best effort, as in Kubernetes.
void record_event(Store& store, const json::Value& involved, std::string_view field_path, std::string_view type,
                  std::string_view reason, std::string_view message, EventSource source);

}  // namespace unitrain::localcluster::controllers
