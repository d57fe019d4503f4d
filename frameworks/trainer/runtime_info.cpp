// Upstream's newRuntimeInfo: JobSet labels, runtimePatches, the resources merge, the PodSets.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "core/api/quantity.h"
#include "core/framework/ascii.h"
#include "core/framework/json_members.h"
#include "frameworks/trainer/build.h"
#include "frameworks/trainer/json_edit.h"
#include "frameworks/trainer/names.h"

namespace unitrain::frameworks::trainer {
namespace {

namespace jm = framework::json_members;
using json::string_at;

// The merge keys of a JobSetSpec: replicated Jobs and their dependsOn by name, the pod template
// beneath as core/v1 merges it (containers, env, volumes by name; mounts by mountPath; ports by
// containerPort; tolerations replaced).
std::optional<std::string> jobset_spec_merge_key(std::string_view list_path) {
  if (list_path == "/replicatedJobs" || list_path == "/replicatedJobs/*/dependsOn") return "name";
  return json::kubernetes_merge_key(list_path);
}

// ResourceRequirements: limits and requests merge per resource, claims by name.
std::optional<std::string> resources_merge_key(std::string_view list_path) {
  if (list_path == "/claims") return "name";
  return std::nullopt;
}

void merge_string_map(json::Document& into, const json::Value* from) {
  if (from == nullptr || !from->IsObject()) return;
  for (const auto& m : from->GetObject()) {
    jm::put(into.root(), json::view(m.name), json::clone(m.value, into.alloc()), into.alloc());
  }
}

std::string ancestor_of(const json::Value& rjob) {
  return string_at(rjob, "/template/metadata/labels/" + json::escape_pointer_token(kAncestorLabel));
}

}  // namespace

Result<RuntimeInfo> runtime_info(const json::Value& trainjob, const json::Value& runtime) {
  RuntimeInfo info;
  const json::Value* runtime_spec = json::find(runtime, "/spec");
  if (const json::Value* t = runtime_spec ? json::find(*runtime_spec, "/template/spec") : nullptr; t && t->IsObject()) {
    info.jobset_spec = json::Document::copy_of(*t);
  }
  if (runtime_spec != nullptr) {
    merge_string_map(info.labels, json::find(*runtime_spec, "/template/metadata/labels"));
    merge_string_map(info.annotations, json::find(*runtime_spec, "/template/metadata/annotations"));
    if (const json::Value* p = jm::member(runtime_spec, "mlPolicy")) info.ml_policy = json::Document::copy_of(*p);
    if (const json::Value* p = jm::member(runtime_spec, "podGroupPolicy")) info.pod_group_policy = json::Document::copy_of(*p);
  }

  std::vector<std::string> runtime_order;
  if (const json::Value* rjobs = jm::member(&info.jobset_spec.root(), "replicatedJobs"); rjobs && rjobs->IsArray()) {
    for (const auto& r : rjobs->GetArray()) runtime_order.push_back(string_at(r, "/name"));
  }

  // runtimePatches, in list order: JobSet metadata maps merged over, the spec strategically.
  if (const json::Value* patches = json::find(trainjob, "/spec/runtimePatches"); patches && patches->IsArray()) {
    for (rapidjson::SizeType k = 0; k < patches->Size(); ++k) {
      const json::Value& patch = (*patches)[k];
      merge_string_map(info.labels, json::find(patch, "/trainingRuntimeSpec/template/metadata/labels"));
      merge_string_map(info.annotations, json::find(patch, "/trainingRuntimeSpec/template/metadata/annotations"));
      const json::Value* spec = json::find(patch, "/trainingRuntimeSpec/template/spec");
      if (spec == nullptr || !spec->IsObject()) continue;
      json::Document smp = json::Document::object();
      if (const json::Value* rjobs = jm::member(spec, "replicatedJobs")) {
        smp.root().AddMember("replicatedJobs", json::clone(*rjobs, smp.alloc()), smp.alloc());
      }
      if (auto s = json::apply_strategic_merge_patch(info.jobset_spec, smp.root(), &jobset_spec_merge_key); !s) {
        return fail(fmt::format("runtimePatches[{}] (manager {}): {}", k, string_at(patch, "/manager"), s.error().message));
      }
    }
    // Back to the runtime's order; a patch cannot reorder the replicated Jobs.
    if (json::Value* rjobs = jm::member(&info.jobset_spec.root(), "replicatedJobs"); rjobs && rjobs->IsArray()) {
      auto rank = [&](const json::Value& r) {
        auto it = std::find(runtime_order.begin(), runtime_order.end(), string_at(r, "/name"));
        return it - runtime_order.begin();
      };
      std::vector<json::Value> items;
      for (auto& r : rjobs->GetArray()) items.emplace_back(std::move(r));
      std::stable_sort(items.begin(), items.end(), [&](const json::Value& a, const json::Value& b) { return rank(a) < rank(b); });
      rjobs->SetArray();
      for (auto& r : items) rjobs->PushBack(std::move(r), info.jobset_spec.alloc());
    }
  }

  const bool has_ml_policy = !info.ml_policy.root().IsNull();
  const bool launcher_as_node =
      has_ml_policy && json::get_bool(info.ml_policy.root(), "/mpi/runLauncherAsNode").value_or(false);
  const json::Value* resources_per_node = jm::member(json::find(trainjob, "/spec/trainer"), "resourcesPerNode");

  if (json::Value* rjobs = jm::member(&info.jobset_spec.root(), "replicatedJobs"); rjobs && rjobs->IsArray()) {
    for (auto& rjob : rjobs->GetArray()) {
      PodSet ps;
      ps.name = string_at(rjob, "/name");
      ps.ancestor = ancestor_of(rjob);
      const bool trainer_node = ps.ancestor == kAncestorTrainer && has_ml_policy;
      int64_t count = json::get_int(rjob, "/template/spec/parallelism").value_or(1);
      if (trainer_node) count = json::get_int(info.ml_policy.root(), "/numNodes").value_or(1);
      ps.count = static_cast<int32_t>(std::max<int64_t>(count, 1));
      info.pod_sets.push_back(ps);

      // The TrainJob's resourcesPerNode merged into the node container (per resource name).
      if (resources_per_node != nullptr && (trainer_node || (ps.name == kNode && launcher_as_node))) {
        if (json::Value* c = find_container(rjob, "containers", kNode)) {
          json::Value* existing = jm::member(c, "resources");
          json::Document merged = existing ? json::Document::copy_of(*existing) : json::Document::object();
          if (auto s = json::apply_strategic_merge_patch(merged, *resources_per_node, &resources_merge_key); !s) {
            return fail(fmt::format("spec.trainer.resourcesPerNode: {}", s.error().message));
          }
          jm::put(*c, "resources", json::clone(merged.root(), info.jobset_spec.alloc()), info.jobset_spec.alloc());
        }
      }
    }
  }
  return info;
}

json::Document resources_per_node(const json::Value& trainjob, const RuntimeInfo& info) {
  if (const json::Value* r = json::find(trainjob, "/spec/trainer/resourcesPerNode"); r && !r->IsNull()) {
    return json::Document::copy_of(*r);
  }
  if (const json::Value* rjobs = jm::member(&info.jobset_spec.root(), "replicatedJobs"); rjobs && rjobs->IsArray()) {
    for (const auto& rjob : rjobs->GetArray()) {
      if (string_at(rjob, "/name") != kNode && ancestor_of(rjob) != kAncestorTrainer) continue;
      const json::Value* c = find_container(rjob, "containers", kNode);
      if (const json::Value* r = jm::member(c, "resources")) return json::Document::copy_of(*r);
      break;
    }
  }
  return json::Document::object();
}

namespace {
int64_t gpu_in(const json::Value* list) {
  if (list == nullptr || !list->IsObject()) return 0;
  for (const auto& m : list->GetObject()) {
    if (framework::ascii::lower(json::view(m.name)).find("gpu") == std::string::npos) continue;
    auto q = api::Quantity::from_json(m.value);
    return q ? q->value() : 0;
  }
  return 0;
}
int64_t quantity_at(const json::Value& resources, std::string_view pointer) {
  const json::Value* v = json::find(resources, pointer);
  if (v == nullptr) return 0;
  auto q = api::Quantity::from_json(*v);
  return q ? q->value() : 0;
}
}  // namespace

int64_t gpu_count(const json::Value& resources) {
  if (int64_t n = gpu_in(jm::member(&resources, "requests")); n != 0) return n;
  return gpu_in(jm::member(&resources, "limits"));
}

int64_t cpu_count(const json::Value& resources) {
  if (int64_t n = quantity_at(resources, "/requests/cpu"); n != 0) return n;
  return quantity_at(resources, "/limits/cpu");
}

}  // namespace unitrain::frameworks::trainer
