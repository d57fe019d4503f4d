#include "core/framework/replica_services.h"

#include <fmt/format.h>

#include "core/framework/ascii.h"
#include "core/framework/child_objects.h"
#include "core/framework/job_labels.h"
#include "core/framework/job_spec.h"
#include "core/framework/json_members.h"

namespace unitrain::framework {

using json::Value;
using json_members::member;

Result<std::vector<DesiredObject>> replica_services(const FrameworkDescriptor& d, const Value& job) {
  std::vector<DesiredObject> out;
  if (json::get_bool(job, "/spec/runPolicy/suspend").value_or(false)) return out;
  const std::string name = json::string_at(job, "/metadata/name");
  const std::string ns = json::string_at(job, "/metadata/namespace");
  for (const PodSlot& slot : pod_slots(d, job)) {
    const Value* container = default_container(d, replica_spec(d, job, slot.replica_type));
    if (container == nullptr) {
      return fail(fmt::format("{} {}: failed to find the port: no container named \"{}\" in spec.{}[{}]", d.kind, name,
                              d.default_container, d.replica_specs_field, slot.replica_type));
    }
    const Labels labels = {{std::string(job_labels::kJobName), name},
                           {std::string(job_labels::kOperatorName), d.controller_name},
                           {std::string(job_labels::kReplicaIndex), std::to_string(slot.index)},
                           {d.replica_type_label, ascii::lower(slot.replica_type)}};
    json::Document svc = child_object("v1", "Service", fmt::format("{}-{}-{}", name, ascii::lower(slot.replica_type), slot.index),
                                      ns, labels);
    auto& a = svc.alloc();
    Value& root = svc.root();
    Value spec(rapidjson::kObjectType);
    spec.AddMember("clusterIP", "None", a);
    spec.AddMember("selector", labels_json(labels, a), a);
    Value ports(rapidjson::kArrayType);
    if (const Value* cports = member(container, "ports"); cports != nullptr && cports->IsArray()) {
      for (const auto& p : cports->GetArray()) {
        Value sp(rapidjson::kObjectType);
        if (const Value* pn = member(&p, "name")) sp.AddMember("name", Value(*pn, a), a);
        if (const Value* pc = member(&p, "containerPort")) sp.AddMember("port", Value(*pc, a), a);
        ports.PushBack(sp, a);
      }
    }
    if (!ports.Empty()) spec.AddMember("ports", ports, a);
    root.AddMember("spec", spec, a);
    DesiredObject obj;
    obj.resource = {"", "v1", "services"};
    obj.object = std::move(svc);
    out.push_back(std::move(obj));
  }
  return out;
}

}  // namespace unitrain::framework
