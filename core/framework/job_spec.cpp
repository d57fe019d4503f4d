#include "core/framework/job_spec.h"

#include "core/framework/json_members.h"

namespace unitrain::framework {

using json::Value;
using json_members::member;

const Value* replica_specs(const FrameworkDescriptor& d, const Value& job) {
  const Value* v = member(member(&job, "spec"), d.replica_specs_field);
  return v != nullptr && v->IsObject() ? v : nullptr;
}

const Value* replica_spec(const FrameworkDescriptor& d, const Value& job, std::string_view rt) {
  return member(replica_specs(d, job), rt);
}

int32_t replicas_of(const Value* spec) {
  const Value* r = member(spec, "replicas");
  return r != nullptr && r->IsInt() ? r->GetInt() : 1;
}

int32_t total_replicas(const FrameworkDescriptor& d, const Value& job) {
  int32_t total = 0;
  if (const Value* specs = replica_specs(d, job)) {
    for (const auto& m : specs->GetObject()) total += replicas_of(&m.value);
  }
  return total;
}

const Value* containers_of_spec(const Value* spec) {
  if (spec == nullptr || !spec->IsObject()) return nullptr;
  const Value* c = json::find(*spec, "/template/spec/containers");
  return c != nullptr && c->IsArray() ? c : nullptr;
}

const Value* default_container(const FrameworkDescriptor& d, const Value* spec) {
  const Value* containers = containers_of_spec(spec);
  if (containers == nullptr) return nullptr;
  for (const auto& c : containers->GetArray()) {
    if (json::string_at(c, "/name") == d.default_container) return &c;
  }
  return nullptr;
}

std::optional<int32_t> named_port(const FrameworkDescriptor& d, const Value* spec, std::string_view port_name) {
  const Value* containers = containers_of_spec(spec);
  if (containers == nullptr) return std::nullopt;
  for (const auto& c : containers->GetArray()) {
    if (json::string_at(c, "/name") != d.default_container) continue;
    const Value* ports = member(&c, "ports");
    if (ports == nullptr || !ports->IsArray()) continue;
    for (const auto& p : ports->GetArray()) {
      const Value* num = member(&p, "containerPort");
      if (json::string_at(p, "/name") == port_name && num != nullptr && num->IsInt()) return num->GetInt();
    }
  }
  return std::nullopt;
}

std::vector<PodSlot> pod_slots(const FrameworkDescriptor& d, const Value& job) {
  std::vector<PodSlot> slots;
  for (const std::string& rt : d.replica_types) {
    const Value* spec = replica_spec(d, job, rt);
    if (spec == nullptr) continue;
    for (int32_t i = 0; i < replicas_of(spec); ++i) slots.push_back({rt, i});
  }
  return slots;
}

}  // namespace unitrain::framework
