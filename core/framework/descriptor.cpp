#include "core/framework/descriptor.h"

#include "core/framework/ascii.h"
#include "core/framework/job_labels.h"

namespace unitrain::framework {

FrameworkDescriptor kubeflow_v1_descriptor(std::string_view kind, std::string_view replica_specs_field,
                                           std::vector<std::string> replica_types, std::string_view container,
                                           std::string_view port_name, int32_t port, std::string_view metrics_framework) {
  const std::string k = ascii::lower(kind);
  FrameworkDescriptor d;
  d.name = "kubeflow.org/" + k;
  d.aliases = {k, std::string(metrics_framework)};
  d.group = "kubeflow.org";
  d.version = "v1";
  d.kind = std::string(kind);
  d.plural = k + "s";
  d.singular = k;
  d.replica_specs_field = std::string(replica_specs_field);
  d.replica_types = std::move(replica_types);
  d.default_container = std::string(container);
  d.default_port_name = std::string(port_name);
  d.default_port = port;
  d.controller_name = k + "-controller";
  d.child_label_selector = std::string(job_labels::kOperatorName) + "=" + d.controller_name;
  d.metrics_framework = std::string(metrics_framework);
  d.managed_by = {"kubeflow.org/training-operator"};
  d.owns_unset_managed_by = true;
  return d;
}

}  // namespace unitrain::framework
