// Additions frameworks make to a pod the core built from a replica template (env, volumes,
// mounts, the job-role label), and the pod-spec JSON pieces they are made of.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/result.h"
#include "core/framework/descriptor.h"
#include "core/json/json.h"

namespace unitrain::framework {

struct EnvVar {
  EnvVar(std::string n, std::string v = {}, std::string f = {})
      : name(std::move(n)), value(std::move(v)), field_path(std::move(f)) {}
  std::string name;
  std::string value;       // empty: written without "value", like Go's omitempty
  std::string field_path;  // non-empty: valueFrom.fieldRef.fieldPath instead of a value
};
// {"name": ..., "value": ...} or {"name": ..., "valueFrom": {"fieldRef": {"fieldPath": ...}}}.
json::Value env_var_json(const EnvVar& e, json::Allocator& a);
// {"name": ..., "mountPath": ...}.
json::Value volume_mount(std::string_view name, std::string_view mount_path, json::Allocator& a);
// A volume `volume_name` of ConfigMap `config_map` exposing each key as a file of that name and mode.
struct ConfigMapFile {
  std::string_view key;
  int mode = 0;
};
json::Value config_map_volume(std::string_view volume_name, std::string_view config_map,
                              std::initializer_list<ConfigMapFile> files, json::Allocator& a);

// Appends `env` after the user env of every container, or only of the one named `only` when set.
Status append_env(json::Document& pod, const std::vector<EnvVar>& env, std::optional<std::string_view> only = std::nullopt);
// Sets the training.kubeflow.org/job-role=master label.
Status set_master_role(json::Document& pod);

// How the training-operator kinds decorate a slot pod: the job-role=master label on the pod that
// leads the job, the default port on the default container, then `env` (appended as above; no
// env list is added when `env` is empty). Fails when the pod has no containers.
Status decorate_replica_pod(const FrameworkDescriptor& d, json::Document& pod, bool master_role,
                            const std::vector<EnvVar>& env, std::optional<std::string_view> only = std::nullopt);

}  // namespace unitrain::framework
