#include "core/framework/replica_defaults.h"

#include "core/framework/ascii.h"
#include "core/framework/job_spec.h"
#include "core/framework/json_members.h"

namespace unitrain::framework {

using json::Value;
using json_members::member;

void ensure_default_port(const FrameworkDescriptor& d, Value& containers, json::Allocator& a) {
  if (!containers.IsArray() || containers.Empty() || d.default_port == 0) return;
  Value* target = &containers[0];
  for (auto& c : containers.GetArray()) {
    if (json::string_at(c, "/name") == d.default_container) {
      target = &c;
      break;
    }
  }
  if (!target->IsObject()) return;
  Value& ports = json_members::ensure_array(*target, "ports", a);
  for (const auto& p : ports.GetArray()) {
    if (json::string_at(p, "/name") == d.default_port_name) return;
  }
  Value port(rapidjson::kObjectType);
  port.AddMember("name", json::str(d.default_port_name, a), a);
  port.AddMember("containerPort", Value(d.default_port), a);
  ports.PushBack(port, a);
}

void set_replica_defaults(const FrameworkDescriptor& d, json::Document& job, std::string_view restart_policy,
                          const std::vector<std::string>& recased) {
  auto& a = job.alloc();
  if (!json::find(job.root(), "/spec/runPolicy/cleanPodPolicy")) {
    (void)json::set_string(job, "/spec/runPolicy/cleanPodPolicy", "None");
  }
  Value* specs = member(member(&job.root(), "spec"), d.replica_specs_field);
  if (specs == nullptr || !specs->IsObject()) return;
  for (const std::string& canonical : recased) {
    for (auto it = specs->MemberBegin(); it != specs->MemberEnd();) {
      std::string_view key(it->name.GetString(), it->name.GetStringLength());
      if (key != canonical && ascii::iequals(key, canonical)) {
        if (specs->HasMember(rapidjson::StringRef(canonical.data(), static_cast<rapidjson::SizeType>(canonical.size())))) {
          it = specs->EraseMember(it);
          continue;
        }
        it->name.SetString(canonical.data(), static_cast<rapidjson::SizeType>(canonical.size()), a);
      }
      ++it;
    }
  }
  for (auto& m : specs->GetObject()) {
    Value& spec = m.value;
    if (!spec.IsObject()) continue;
    if (member(&spec, "replicas") == nullptr) json_members::put(spec, "replicas", Value(1), a);
    const Value* rp = member(&spec, "restartPolicy");
    if (rp == nullptr || (rp->IsString() && rp->GetStringLength() == 0)) {
      json_members::put(spec, "restartPolicy", restart_policy, a);
    }
    if (Value* containers = json::find(spec, "/template/spec/containers")) ensure_default_port(d, *containers, a);
  }
}

void set_elastic_replica_defaults(const FrameworkDescriptor& d, json::Document& job) {
  auto& a = job.alloc();
  Value* elastic = json::find(job.root(), "/spec/elasticPolicy");
  if (elastic == nullptr || !elastic->IsObject()) return;
  const Value* min = member(elastic, "minReplicas");
  const Value* max = member(elastic, "maxReplicas");
  if (max != nullptr && min == nullptr) {
    json_members::put(*elastic, "minReplicas", Value(*max, a), a);
  } else if (min != nullptr && max == nullptr) {
    json_members::put(*elastic, "maxReplicas", Value(*min, a), a);
  } else if (min == nullptr && max == nullptr) {
    if (const Value* worker = replica_spec(d, job.root(), "Worker")) {
      const int32_t n = replicas_of(worker);
      json_members::put(*elastic, "minReplicas", Value(n), a);
      json_members::put(*elastic, "maxReplicas", Value(n), a);
    }
  }
}

}  // namespace unitrain::framework
