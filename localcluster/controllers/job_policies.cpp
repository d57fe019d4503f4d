#include "localcluster/controllers/job_policies.h"

#include <fmt/format.h>

#include "localcluster/controllers/controller_base.h"

namespace unitrain::localcluster::controllers {
namespace {

using json::Value;

std::vector<PodFailureFacts::Terminated> terminated(const Value& pod, std::string_view pointer) {
  std::vector<PodFailureFacts::Terminated> out;
  const Value* statuses = json::find(pod, pointer);
  if (!statuses || !statuses->IsArray()) return out;
  for (const auto& s : statuses->GetArray()) {
    const Value* t = json::find(s, "/state/terminated");
    if (!t || !t->IsObject()) continue;
    out.push_back({std::string(str_at(s, "/name")), json::get_int(*t, "/exitCode").value_or(0)});
  }
  return out;
}

bool exit_code_matches(const Value& req, const PodFailureFacts::Terminated& c) {
  if (c.exit_code == 0) return false;
  if (const Value* name = json::find(req, "/containerName"); name && name->IsString() && json::view(*name) != c.name)
    return false;
  bool listed = false;
  if (const Value* values = json::find(req, "/values"); values && values->IsArray())
    for (const auto& v : values->GetArray())
      if (v.IsInt64() && v.GetInt64() == c.exit_code) listed = true;
  std::string_view op = str_at(req, "/operator");
  if (op == "In") return listed;
  if (op == "NotIn") return !listed;
  return false;
}

FailureAction action_of(std::string_view a) {
  if (a == "FailJob") return FailureAction::FailJob;
  if (a == "FailIndex") return FailureAction::FailIndex;
  if (a == "Count") return FailureAction::Count;
  if (a == "Ignore") return FailureAction::Ignore;
  return FailureAction::None;
}

}  // namespace

PodFailureFacts pod_failure_facts(const Value& pod) {
  PodFailureFacts f;
  f.ns = std::string(str_at(pod, "/metadata/namespace"));
  f.name = std::string(str_at(pod, "/metadata/name"));
  f.containers = terminated(pod, "/status/containerStatuses");
  f.init_containers = terminated(pod, "/status/initContainerStatuses");
  if (const Value* cs = json::find(pod, "/status/conditions"); cs && cs->IsArray())
    for (const auto& c : cs->GetArray()) f.conditions.emplace_back(str_at(c, "/type"), str_at(c, "/status"));
  return f;
}

FailureMatch match_pod_failure_policy(const Value* policy, const PodFailureFacts& pod) {
  FailureMatch out;
  const Value* rules = policy ? json::find(*policy, "/rules") : nullptr;
  if (!rules || !rules->IsArray()) return out;
  int index = 0;
  for (const auto& rule : rules->GetArray()) {
    std::string_view action_name = str_at(rule, "/action");
    FailureAction action = action_of(action_name);
    if (const Value* req = json::find(rule, "/onExitCodes"); req && req->IsObject()) {
      const PodFailureFacts::Terminated* hit = nullptr;
      for (const auto* list : {&pod.containers, &pod.init_containers}) {
        for (const auto& c : *list)
          if (exit_code_matches(*req, c)) {
            hit = &c;
            break;
          }
        if (hit) break;
      }
      if (hit && action != FailureAction::None) {
        out.action = action;
        if (action == FailureAction::FailJob)
          out.fail_job_message = fmt::format("Container {} for pod {}/{} failed with exit code {} matching {} rule at index {}",
                                             hit->name, pod.ns, pod.name, hit->exit_code, action_name, index);
        return out;
      }
    } else if (const Value* patterns = json::find(rule, "/onPodConditions"); patterns && patterns->IsArray()) {
      const std::string* hit = nullptr;
      for (const auto& [type, status] : pod.conditions) {
        for (const auto& p : patterns->GetArray()) {
          std::string_view want_status = str_at(p, "/status");
          if (want_status.empty()) want_status = "True";  // kube-apiserver's default
          if (str_at(p, "/type") == type && want_status == status) {
            hit = &type;
            break;
          }
        }
        if (hit) break;
      }
      if (hit && action != FailureAction::None) {
        out.action = action;
        if (action == FailureAction::FailJob)
          out.fail_job_message = fmt::format("Pod {}/{} has condition {} matching {} rule at index {}", pod.ns, pod.name,
                                             *hit, action_name, index);
        return out;
      }
    }
    ++index;
  }
  return out;
}

std::optional<std::string> match_success_policy(const Value* policy, int64_t completions,
                                                const CompletionIndexes& succeeded) {
  const Value* rules = policy ? json::find(*policy, "/rules") : nullptr;
  if (!rules || !rules->IsArray() || succeeded.empty()) return std::nullopt;
  int index = 0;
  for (const auto& rule : rules->GetArray()) {
    auto count = json::get_int(rule, "/succeededCount");
    if (const Value* ix = json::find(rule, "/succeededIndexes"); ix && ix->IsString()) {
      auto required = CompletionIndexes::parse_lenient(json::view(*ix), completions);
      if (!required.empty()) {
        int64_t have = succeeded.count_in(required);
        if (have == required.total() || (count && have >= *count)) return fmt::format("Matched rules at index {}", index);
      }
    } else if (count && succeeded.total() >= *count) {
      return fmt::format("Matched rules at index {}", index);
    }
    ++index;
  }
  return std::nullopt;
}

}  // namespace unitrain::localcluster::controllers
