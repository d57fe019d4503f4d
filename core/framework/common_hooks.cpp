#include "core/framework/common_hooks.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>

#include <fmt/format.h>

#include "core/api/labels.h"

namespace unitrain::framework::common {

FrameworkDescriptor kubeflow_v1_descriptor(std::string_view kind, std::string_view replica_specs_field,
                                           std::vector<std::string> replica_types, std::string_view container,
                                           std::string_view port_name, int32_t port, std::string_view metrics_framework) {
  const std::string k = lower(kind);
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
  d.child_label_selector = "training.kubeflow.org/operator-name=" + d.controller_name;
  d.metrics_framework = std::string(metrics_framework);
  d.managed_by = {"kubeflow.org/training-operator"};
  d.owns_unset_managed_by = true;
  return d;
}
namespace {

using api::FieldError;
using api::FieldPath;
using json::Value;

constexpr std::string_view kLabelJobName = "training.kubeflow.org/job-name";
constexpr std::string_view kLabelOperator = "training.kubeflow.org/operator-name";
constexpr std::string_view kLabelReplicaIndex = "training.kubeflow.org/replica-index";
constexpr std::string_view kLabelJobRole = "training.kubeflow.org/job-role";

const std::vector<std::string> kSupportedManagers = {"kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"};

rapidjson::GenericStringRef<char> ref(std::string_view s) {
  return rapidjson::StringRef(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

std::optional<int32_t> parse_index(std::string_view s) {
  int32_t n = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || ptr != s.data() + s.size() || n < 0) return std::nullopt;
  return n;
}

// Pods of one type grouped by their replica-index label.
std::map<int32_t, std::vector<const Value*>> pods_by_index(const FrameworkDescriptor& d, const std::string& rt,
                                                           const Observed& observed) {
  std::map<int32_t, std::vector<const Value*>> by_index;
  const std::string type_key = "/" + json::escape_pointer_token(d.replica_type_label);
  const std::string index_key = "/" + json::escape_pointer_token(kLabelReplicaIndex);
  for (const Value* pod : observed.pods) {
    if (pod == nullptr) continue;
    const Value* labels = json::find(*pod, "/metadata/labels");
    if (labels == nullptr || string_at(*labels, type_key) != lower(rt)) continue;
    auto idx = parse_index(string_at(*labels, index_key));
    if (!idx) continue;
    by_index[*idx].push_back(pod);
  }
  return by_index;
}

}  // namespace

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool iequals(std::string_view a, std::string_view b) { return lower(a) == lower(b); }

const Value* member(const Value* obj, std::string_view key) {
  if (obj == nullptr || !obj->IsObject()) return nullptr;
  auto it = obj->FindMember(ref(key));
  return it == obj->MemberEnd() ? nullptr : &it->value;
}
Value* member(Value* obj, std::string_view key) {
  if (obj == nullptr || !obj->IsObject()) return nullptr;
  auto it = obj->FindMember(ref(key));
  return it == obj->MemberEnd() ? nullptr : &it->value;
}

std::string string_at(const Value& root, std::string_view pointer) {
  auto s = json::get_string(root, pointer);
  return s ? std::string(*s) : std::string();
}

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
  const Value* found = nullptr;
  for (const auto& c : containers->GetArray()) {
    if (string_at(c, "/name") == d.default_container && found == nullptr) found = &c;
  }
  return found;
}

std::optional<int32_t> named_port(const FrameworkDescriptor& d, const Value* spec, std::string_view port_name) {
  const Value* containers = containers_of_spec(spec);
  if (containers == nullptr) return std::nullopt;
  for (const auto& c : containers->GetArray()) {
    if (string_at(c, "/name") != d.default_container) continue;
    const Value* ports = member(&c, "ports");
    if (ports == nullptr || !ports->IsArray()) continue;
    for (const auto& p : ports->GetArray()) {
      const Value* num = member(&p, "containerPort");
      if (string_at(p, "/name") == port_name && num != nullptr && num->IsInt()) return num->GetInt();
    }
  }
  return std::nullopt;
}

void ensure_default_port(const FrameworkDescriptor& d, Value& containers, json::Allocator& a) {
  if (!containers.IsArray() || containers.Empty() || d.default_port == 0) return;
  Value* target = &containers[0];
  for (auto& c : containers.GetArray()) {
    if (string_at(c, "/name") == d.default_container) {
      target = &c;
      break;
    }
  }
  if (!target->IsObject()) return;
  Value* ports = member(target, "ports");
  if (ports == nullptr || !ports->IsArray()) {
    if (ports != nullptr) target->RemoveMember("ports");
    target->AddMember("ports", Value(rapidjson::kArrayType), a);
    ports = member(target, "ports");
  }
  for (const auto& p : ports->GetArray()) {
    if (string_at(p, "/name") == d.default_port_name) return;
  }
  Value port(rapidjson::kObjectType);
  port.AddMember("name", json::str(d.default_port_name, a), a);
  port.AddMember("containerPort", Value(d.default_port), a);
  ports->PushBack(port, a);
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
      if (key != canonical && iequals(key, canonical)) {
        if (member(specs, canonical) != nullptr) {
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
    if (member(&spec, "replicas") == nullptr) spec.AddMember("replicas", Value(1), a);
    Value* rp = member(&spec, "restartPolicy");
    if (rp == nullptr) {
      spec.AddMember("restartPolicy", json::str(restart_policy, a), a);
    } else if (rp->IsString() && rp->GetStringLength() == 0) {
      rp->SetString(restart_policy.data(), static_cast<rapidjson::SizeType>(restart_policy.size()), a);
    }
    if (Value* containers = json::find(spec, "/template/spec/containers")) ensure_default_port(d, *containers, a);
  }
}

void set_elastic_replica_defaults(const FrameworkDescriptor& d, json::Document& job) {
  auto& a = job.alloc();
  Value* elastic = json::find(job.root(), "/spec/elasticPolicy");
  if (elastic == nullptr || !elastic->IsObject()) return;
  const bool has_min = member(elastic, "minReplicas") != nullptr;
  const bool has_max = member(elastic, "maxReplicas") != nullptr;
  if (has_max && !has_min) {
    Value v(*member(elastic, "maxReplicas"), a);
    elastic->AddMember("minReplicas", v, a);
  } else if (has_min && !has_max) {
    Value v(*member(elastic, "minReplicas"), a);
    elastic->AddMember("maxReplicas", v, a);
  } else if (!has_min && !has_max) {
    if (const Value* worker = replica_spec(d, job.root(), "Worker")) {
      const int32_t n = replicas_of(worker);
      elastic->AddMember("minReplicas", Value(n), a);
      elastic->AddMember("maxReplicas", Value(n), a);
    }
  }
}

void validate_name(const Value& job, api::FieldErrorList& errs) {
  const std::string name = string_at(job, "/metadata/name");
  if (auto reasons = api::validate_dns1035_label(name); !reasons.empty()) {
    std::string joined;
    for (const auto& r : reasons) joined += (joined.empty() ? "" : ",") + r;
    errs.push_back(FieldError::invalid(FieldPath("metadata").child("name"), name, "should match: " + joined));
  }
}

void validate_managed_by(const Value* old_job, const Value& job, api::FieldErrorList& errs) {
  const FieldPath managed_path = FieldPath("spec").child("runPolicy").child("managedBy");
  const Value* managed = json::find(job, "/spec/runPolicy/managedBy");
  if (old_job != nullptr) {
    // Upstream's PyTorch update handler compares the new object with itself; we compare old and new.
    const Value* old_managed = json::find(*old_job, "/spec/runPolicy/managedBy");
    const bool same = (old_managed == nullptr && managed == nullptr) ||
                      (old_managed != nullptr && managed != nullptr && json::equal(*old_managed, *managed));
    if (!same) {
      errs.push_back(FieldError::invalid(managed_path, managed ? api::FieldValue::of_json(*managed) : api::FieldValue::null(),
                                         "field is immutable"));
    }
  }
  if (managed != nullptr && managed->IsString()) {
    std::string v = managed->GetString();
    if (std::find(kSupportedManagers.begin(), kSupportedManagers.end(), v) == kSupportedManagers.end()) {
      errs.push_back(FieldError::not_supported(managed_path, v, kSupportedManagers));
    }
  }
}

void validate_replica_specs(const FrameworkDescriptor& d, const Value& job, const ReplicaSpecRules& rules,
                            api::FieldErrorList& errs) {
  const FieldPath specs_path = FieldPath("spec").child(d.replica_specs_field);
  const Value* specs = member(member(&job, "spec"), d.replica_specs_field);
  if (specs == nullptr || specs->IsNull()) {
    errs.push_back(FieldError::required(specs_path, "must be required"));
    return;
  }
  if (!specs->IsObject()) return;
  for (const auto& m : specs->GetObject()) {
    std::string rt(m.name.GetString(), m.name.GetStringLength());
    FieldPath role = specs_path.key(rt);
    FieldPath containers_path = role.child("template").child("spec").child("containers");
    if (rules.restrict_types && std::find(d.replica_types.begin(), d.replica_types.end(), rt) == d.replica_types.end()) {
      errs.push_back(FieldError::not_supported(role, rt, d.replica_types));
    }
    const Value* containers = containers_of_spec(&m.value);
    if (containers == nullptr || containers->Empty()) {
      errs.push_back(FieldError::required(containers_path, "must be specified"));
    }
    bool default_present = false;
    if (containers != nullptr) {
      for (rapidjson::SizeType i = 0; i < containers->Size(); ++i) {
        const Value& c = (*containers)[i];
        if (string_at(c, "/image").empty()) {
          errs.push_back(FieldError::required(containers_path.index(i).child("image"), "must be required"));
        }
        if (string_at(c, "/name") == d.default_container) default_present = true;
      }
    }
    if (!default_present) {
      const std::string shown = rules.quote_default_name ? fmt::format("\"{}\"", d.default_container) : d.default_container;
      errs.push_back(FieldError::required(containers_path, fmt::format("must have at least one container with name {}", shown)));
    }
  }
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

Result<std::vector<DesiredObject>> replica_services(const FrameworkDescriptor& d, const Value& job) {
  std::vector<DesiredObject> out;
  // Upstream's ReconcileServices does not run for a suspended job, whose services the core
  // deletes along with its pods (§3.2 step 5); desiring them here would re-create them.
  if (json::get_bool(job, "/spec/runPolicy/suspend").value_or(false)) return out;
  const std::string name = string_at(job, "/metadata/name");
  const std::string ns = string_at(job, "/metadata/namespace");
  for (const PodSlot& slot : pod_slots(d, job)) {
    const Value* container = default_container(d, replica_spec(d, job, slot.replica_type));
    if (container == nullptr) {
      return fail(fmt::format("{} {}: failed to find the port: no container named \"{}\" in spec.{}[{}]", d.kind, name,
                              d.default_container, d.replica_specs_field, slot.replica_type));
    }
    json::Document svc = json::Document::object();
    auto& a = svc.alloc();
    Value& root = svc.root();
    root.AddMember("apiVersion", "v1", a);
    root.AddMember("kind", "Service", a);
    auto labels = [&] {
      Value l(rapidjson::kObjectType);
      l.AddMember(json::str(kLabelJobName, a), json::str(name, a), a);
      l.AddMember(json::str(kLabelOperator, a), json::str(d.controller_name, a), a);
      l.AddMember(json::str(kLabelReplicaIndex, a), json::str(std::to_string(slot.index), a), a);
      l.AddMember(json::str(d.replica_type_label, a), json::str(lower(slot.replica_type), a), a);
      return l;
    };
    Value meta(rapidjson::kObjectType);
    meta.AddMember("name", json::str(fmt::format("{}-{}-{}", name, lower(slot.replica_type), slot.index), a), a);
    if (!ns.empty()) meta.AddMember("namespace", json::str(ns, a), a);
    meta.AddMember("labels", labels(), a);
    root.AddMember("metadata", meta, a);
    Value spec(rapidjson::kObjectType);
    spec.AddMember("clusterIP", "None", a);
    spec.AddMember("selector", labels(), a);
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

StatusProposal::ReplicaCounts count_replicas(const FrameworkDescriptor& d, const std::string& rt, const Observed& observed) {
  StatusProposal::ReplicaCounts counts;
  for (const auto& [idx, pods] : pods_by_index(d, rt, observed)) {
    if (pods.size() != 1) continue;
    const Value& pod = *pods.front();
    const std::string phase = string_at(pod, "/status/phase");
    if (phase == "Running") {
      if (json::find(pod, "/metadata/deletionTimestamp") != nullptr) ++counts.failed;
      else ++counts.active;
    } else if (phase == "Succeeded") {
      ++counts.succeeded;
    } else if (phase == "Failed") {
      ++counts.failed;
    }
  }
  return counts;
}

const Value* pod_at(const FrameworkDescriptor& d, const std::string& rt, int32_t index, const Observed& observed) {
  auto by_index = pods_by_index(d, rt, observed);
  auto it = by_index.find(index);
  return it != by_index.end() && it->second.size() == 1 ? it->second.front() : nullptr;
}

std::string selector_string(const FrameworkDescriptor& d, std::string_view job_name, std::string_view rt) {
  return fmt::format("{}={},{}={},{}={}", kLabelJobName, job_name, kLabelOperator, d.controller_name, d.replica_type_label,
                     lower(rt));
}

ReplicaStatusRules::OnFailed restart_on_exit_code_policy(const ReplicaState& s) {
  return string_at(s.spec, "/restartPolicy") == "ExitCode" ? ReplicaStatusRules::OnFailed::Restart
                                                           : ReplicaStatusRules::OnFailed::Fail;
}

ReplicaStatusRules master_worker_status_rules(std::string kind, std::string name, std::string ns, bool has_master) {
  using Rules = ReplicaStatusRules;
  Rules rules;
  rules.lead = [has_master](const ReplicaState& s) {
    if (has_master) return s.type == "Master" ? Rules::Lead::RunningFirst : Rules::Lead::None;
    return s.type == "Worker" ? Rules::Lead::CompletionFirst : Rules::Lead::None;
  };
  rules.complete = [](const ReplicaState& s) { return s.expected() == 0; };
  rules.on_failed = [](const ReplicaState& s) {
    if (s.replicas <= s.counts.succeeded + s.counts.active) return Rules::OnFailed::Ignore;
    return string_at(s.spec, "/restartPolicy") != "Never" ? Rules::OnFailed::Restart : Rules::OnFailed::Fail;
  };
  rules.message = [kind = std::move(kind), name = std::move(name), ns = std::move(ns), has_master](
                      std::string_view type, const ReplicaState& s) {
    if (type == "Running") {
      return has_master ? fmt::format("{} {} is running.", kind, name) : fmt::format("{} {}/{} is running.", kind, ns, name);
    }
    if (type == "Succeeded") {
      return has_master ? fmt::format("{} {} is successfully completed.", kind, name)
                        : fmt::format("{} {}/{} successfully completed.", kind, ns, name);
    }
    const std::string_view verb = type == "Restarting" ? "is restarting" : "is failed";
    return fmt::format("{} {} {} because {} {} replica(s) failed.", kind, name, verb, s.counts.failed, s.type);
  };
  rules.selector = true;
  return rules;
}

StatusProposal replica_status_walk(const FrameworkDescriptor& d, const Value& job, const Observed& observed,
                                   const ReplicaStatusRules& rules) {
  using Lead = ReplicaStatusRules::Lead;
  StatusProposal p;
  const std::string name = string_at(job, "/metadata/name");
  for (const std::string& rt : d.replica_types) {
    if (replica_spec(d, job, rt) == nullptr) continue;
    auto& counts = p.replica_statuses[rt];
    counts = count_replicas(d, rt, observed);
    if (rules.selector) counts.selector = selector_string(d, name, rt);
  }
  auto propose = [&](std::string_view type, const ReplicaState& s) {
    p.conditions.push_back({std::string(type), "True", d.kind + std::string(type), rules.message(type, s)});
  };
  auto announce_running = [&](const ReplicaState& s) {
    if (rules.running_before_terminal && p.conditions.empty()) propose("Running", s);
  };
  for (const std::string& rt : d.replica_types) {
    const Value* spec = replica_spec(d, job, rt);
    if (spec == nullptr) continue;
    const ReplicaState s{rt, *spec, replicas_of(spec), p.replica_statuses[rt]};
    const Lead lead = rules.lead(s);
    if (lead == Lead::RunningFirst && s.counts.active > 0) propose("Running", s);
    if (lead != Lead::None && rules.complete(s)) {
      announce_running(s);
      propose("Succeeded", s);
      p.set_completion_time = true;
      return p;
    }
    if (lead == Lead::CompletionFirst && s.counts.active > 0) propose("Running", s);
    if (s.counts.failed == 0) continue;
    switch (rules.on_failed(s)) {
      case ReplicaStatusRules::OnFailed::Ignore:
        break;
      case ReplicaStatusRules::OnFailed::Restart:
        announce_running(s);
        propose("Restarting", s);
        break;
      case ReplicaStatusRules::OnFailed::Fail:
        announce_running(s);
        propose("Failed", s);
        p.set_completion_time = true;
        return p;
    }
  }
  return p;
}

Status append_env(json::Document& pod, const std::vector<EnvVar>& env, std::optional<std::string_view> only) {
  auto& a = pod.alloc();
  Value* containers = json::find(pod.root(), "/spec/containers");
  if (containers == nullptr || !containers->IsArray()) {
    return fail(fmt::format("pod {}: spec.containers is missing", string_at(pod.root(), "/metadata/name")));
  }
  for (auto& c : containers->GetArray()) {
    if (!c.IsObject()) continue;
    if (only && string_at(c, "/name") != *only) continue;
    Value* list = member(&c, "env");
    if (list == nullptr || !list->IsArray()) {
      if (list != nullptr) c.RemoveMember("env");
      c.AddMember("env", Value(rapidjson::kArrayType), a);
      list = member(&c, "env");
    }
    for (const EnvVar& e : env) {
      Value item(rapidjson::kObjectType);
      item.AddMember("name", json::str(e.name, a), a);
      if (!e.field_path.empty()) {
        Value field_ref(rapidjson::kObjectType);
        field_ref.AddMember("fieldPath", json::str(e.field_path, a), a);
        Value from(rapidjson::kObjectType);
        from.AddMember("fieldRef", field_ref, a);
        item.AddMember("valueFrom", from, a);
      } else if (!e.value.empty()) {
        item.AddMember("value", json::str(e.value, a), a);
      }
      list->PushBack(item, a);
    }
  }
  return {};
}

Status set_master_role(json::Document& pod) {
  return json::set_string(pod, "/metadata/labels/" + json::escape_pointer_token(kLabelJobRole), "master");
}

}  // namespace unitrain::framework::common
