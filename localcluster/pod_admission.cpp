#include "localcluster/pod_admission.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/api/quantity.h"

namespace unitrain::localcluster {

namespace {

using api::Quantity;
using json::Value;

std::string sget(const Value& v, std::string_view pointer) { return std::string(json::get_string(v, pointer).value_or("")); }

Quantity quantity_at(const Value& v, std::string_view pointer) {
  const Value* q = json::find(v, pointer);
  if (q == nullptr) return {};
  auto parsed = Quantity::from_json(*q);
  return parsed ? *parsed : Quantity{};
}

// A pod's effective request or limit of `resource` ("requests"/"limits"): the containers' sum, or
// the largest init container when that is larger.
Quantity pod_amount(const Value& pod, std::string_view kind, std::string_view resource) {
  std::string pointer = std::string("/resources/") + std::string(kind) + "/" + std::string(resource);
  Quantity sum;
  if (const Value* cs = json::find(pod, "/spec/containers"); cs && cs->IsArray())
    for (const auto& c : cs->GetArray()) sum += quantity_at(c, pointer);
  if (const Value* cs = json::find(pod, "/spec/initContainers"); cs && cs->IsArray())
    for (const auto& c : cs->GetArray())
      if (auto q = quantity_at(c, pointer); q > sum) sum = q;
  return sum;
}

bool terminal(const Value& pod) {
  auto phase = sget(pod, "/status/phase");
  return phase == "Succeeded" || phase == "Failed";
}

// A quota's resource name as (kind, resource): "cpu" and "requests.cpu" are requests.
std::optional<std::pair<std::string, std::string>> compute_resource(const std::string& name) {
  if (name == "cpu" || name == "memory") return std::pair<std::string, std::string>{"requests", name};
  for (const char* kind : {"requests", "limits"}) {
    std::string prefix = std::string(kind) + ".";
    if (name.rfind(prefix, 0) == 0 && (name == prefix + "cpu" || name == prefix + "memory"))
      return std::pair<std::string, std::string>{kind, name.substr(prefix.size())};
  }
  return std::nullopt;
}

bool counts_pods(const std::string& name) { return name == "pods" || name == "count/pods"; }

Quantity used_of(const std::string& name, const std::vector<const Value*>& pods) {
  Quantity used;
  for (const Value* p : pods) {
    if (terminal(*p)) continue;
    if (counts_pods(name))
      used += Quantity::from_int(1);
    else if (auto cr = compute_resource(name))
      used += pod_amount(*p, cr->first, cr->second);
  }
  return used;
}

std::string joined(const std::map<std::string, std::string>& m) {
  std::string out;
  for (const auto& [k, v] : m) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out;
}

// A container's (or the pod's) requests and limits by resource name.
using ResourceList = std::map<std::string, Quantity>;

ResourceList resource_list(const Value& container, const char* kind) {
  ResourceList out;
  const Value* list = json::find(container, std::string("/resources/") + kind);
  if (list == nullptr || !list->IsObject()) return out;
  for (auto m = list->MemberBegin(); m != list->MemberEnd(); ++m)
    if (auto q = Quantity::from_json(m->value)) out[std::string(json::view(m->name))] = *q;
  return out;
}

// LimitRanger's pod totals: the containers' sum, or the largest init container where larger.
ResourceList pod_resource_list(const Value& pod, const char* kind) {
  ResourceList sum, init_max;
  if (const Value* cs = json::find(pod, "/spec/containers"); cs && cs->IsArray())
    for (const auto& c : cs->GetArray())
      for (const auto& [name, q] : resource_list(c, kind)) sum[name] += q;
  if (const Value* cs = json::find(pod, "/spec/initContainers"); cs && cs->IsArray())
    for (const auto& c : cs->GetArray())
      for (const auto& [name, q] : resource_list(c, kind))
        if (auto it = init_max.find(name); it == init_max.end() || q > it->second) init_max[name] = q;
  for (const auto& [name, q] : init_max)
    if (auto it = sum.find(name); it == sum.end() || q > it->second) sum[name] = q;
  return sum;
}

// The constraints of one LimitRange item of `type` (min, max, maxLimitRequestRatio) on one set of
// requests and limits, worded as kube-apiserver's LimitRanger words them. Go iterates the item's
// maps in random order; resources are taken in name order here.
void check_constraints(const Value& item, const std::string& type, const ResourceList& requests,
                       const ResourceList& limits, bool limits_recognized, std::vector<std::string>& errors) {
  auto each = [&](const char* field, const auto& check) {
    const Value* m = json::find(item, std::string("/") + field);
    if (m == nullptr || !m->IsObject()) return;
    std::map<std::string, Quantity> ordered;
    for (auto e = m->MemberBegin(); e != m->MemberEnd(); ++e)
      if (auto q = Quantity::from_json(e->value)) ordered[std::string(json::view(e->name))] = *q;
    for (const auto& [name, enforced] : ordered) check(name, enforced);
  };
  auto find = [](const ResourceList& l, const std::string& name) -> const Quantity* {
    auto it = l.find(name);
    return it == l.end() ? nullptr : &it->second;
  };
  each("min", [&](const std::string& name, const Quantity& enforced) {
    const Quantity* req = find(requests, name);
    const Quantity* lim = limits_recognized ? find(limits, name) : nullptr;
    std::string head = "minimum " + name + " usage per " + type + " is " + enforced.to_string();
    if (req == nullptr)
      errors.push_back(head + ".  No request is specified");
    else if (*req < enforced)
      errors.push_back(head + ", but request is " + req->to_string());
    else if (lim != nullptr && *lim < enforced)
      errors.push_back(head + ", but limit is " + lim->to_string());
  });
  each("max", [&](const std::string& name, const Quantity& enforced) {
    const Quantity* req = find(requests, name);
    std::string head = "maximum " + name + " usage per " + type + " is " + enforced.to_string();
    if (!limits_recognized) {  // a claim: only its request counts
      if (req == nullptr)
        errors.push_back(head + ".  No request is specified");
      else if (*req > enforced)
        errors.push_back(head + ", but request is " + req->to_string());
      return;
    }
    const Quantity* lim = find(limits, name);
    if (lim == nullptr)
      errors.push_back(head + ".  No limit is specified");
    else if (*lim > enforced)
      errors.push_back(head + ", but limit is " + lim->to_string());
    else if (req != nullptr && *req > enforced)
      errors.push_back(head + ", but request is " + req->to_string());
  });
  if (!limits_recognized) return;
  each("maxLimitRequestRatio", [&](const std::string& name, const Quantity& enforced) {
    const Quantity* req = find(requests, name);
    const Quantity* lim = find(limits, name);
    std::string head = name + " max limit to request ratio per " + type + " is " + enforced.to_string();
    if (req == nullptr || req->milli_value() == 0) {
      errors.push_back(head + ", but no request is specified or request is 0");
      return;
    }
    if (lim == nullptr || lim->milli_value() == 0) {
      errors.push_back(head + ", but no limit is specified or limit is 0");
      return;
    }
    double ratio = static_cast<double>(lim->milli_value()) / static_cast<double>(req->milli_value());
    if (ratio * 1000.0 > static_cast<double>(enforced.milli_value()))
      errors.push_back(head + ", but provided ratio is " + fmt::format("{:f}", ratio));
  });
}

// Go's utilerrors.NewAggregate: one message alone, several in brackets, duplicates once.
std::optional<std::string> aggregate(const std::vector<std::string>& errors) {
  std::vector<std::string> unique;
  for (const auto& e : errors)
    if (std::find(unique.begin(), unique.end(), e) == unique.end()) unique.push_back(e);
  if (unique.empty()) return std::nullopt;
  if (unique.size() == 1) return unique.front();
  std::string out = "[";
  for (size_t i = 0; i < unique.size(); ++i) out += (i ? ", " : "") + unique[i];
  return out + "]";
}

}  // namespace

std::optional<std::string> limit_range_refusal(const Value& pod, const std::vector<const Value*>& limit_ranges) {
  std::vector<std::string> errors;
  for (const Value* lr : limit_ranges) {
    const Value* items = json::find(*lr, "/spec/limits");
    if (items == nullptr || !items->IsArray()) continue;
    for (const auto& item : items->GetArray()) {
      std::string type = sget(item, "/type");
      if (type == "Container") {
        for (const char* list : {"/spec/containers", "/spec/initContainers"})
          if (const Value* cs = json::find(pod, list); cs && cs->IsArray())
            for (const auto& c : cs->GetArray())
              check_constraints(item, type, resource_list(c, "requests"), resource_list(c, "limits"), true, errors);
      } else if (type == "Pod") {
        check_constraints(item, type, pod_resource_list(pod, "requests"), pod_resource_list(pod, "limits"), true, errors);
      }
    }
  }
  return aggregate(errors);
}

std::optional<std::string> limit_range_claim_refusal(const Value& claim, const std::vector<const Value*>& limit_ranges) {
  std::vector<std::string> errors;
  const Value* spec = json::find(claim, "/spec");
  ResourceList requests = spec != nullptr ? resource_list(*spec, "requests") : ResourceList{};
  for (const Value* lr : limit_ranges) {
    const Value* items = json::find(*lr, "/spec/limits");
    if (items == nullptr || !items->IsArray()) continue;
    for (const auto& item : items->GetArray())
      if (sget(item, "/type") == "PersistentVolumeClaim")
        check_constraints(item, "PersistentVolumeClaim", requests, {}, false, errors);
  }
  return aggregate(errors);
}

void apply_limit_ranges(json::Document& pod, const std::vector<const Value*>& limit_ranges) {
  std::map<std::string, std::vector<std::string>> set_requests, set_limits;  // container -> resources
  Value* containers = json::find(pod.root(), "/spec/containers");
  if (containers == nullptr || !containers->IsArray()) return;
  auto& a = pod.alloc();
  for (const Value* lr : limit_ranges) {
    const Value* items = json::find(*lr, "/spec/limits");
    if (items == nullptr || !items->IsArray()) continue;
    for (const auto& item : items->GetArray()) {
      if (sget(item, "/type") != "Container") continue;
      const Value* defaults = json::find(item, "/default");
      const Value* default_requests = json::find(item, "/defaultRequest");
      for (auto& c : containers->GetArray()) {
        if (!c.IsObject()) continue;
        std::string cname = sget(c, "/name");
        if (!c.HasMember("resources") || !c["resources"].IsObject()) {
          c.RemoveMember("resources");
          c.AddMember("resources", Value(rapidjson::kObjectType), a);
        }
        Value& res = c["resources"];
        auto fill = [&](const char* field, const Value* from, std::vector<std::string>& noted) {
          if (from == nullptr || !from->IsObject()) return;
          if (!res.HasMember(field) || !res[field].IsObject()) {
            res.RemoveMember(field);
            res.AddMember(Value(field, a), Value(rapidjson::kObjectType), a);
          }
          Value& target = res[field];
          for (auto m = from->MemberBegin(); m != from->MemberEnd(); ++m) {
            if (target.HasMember(m->name)) continue;
            target.AddMember(Value(m->name, a), Value(m->value, a), a);
            noted.push_back(std::string(json::view(m->name)));
          }
        };
        fill("limits", defaults, set_limits[cname]);
        // A resource defaultRequest does not name takes the default limit as its request.
        fill("requests", default_requests, set_requests[cname]);
        fill("requests", defaults, set_requests[cname]);
      }
    }
  }
  std::string note;
  for (auto* which : {&set_requests, &set_limits})
    for (const auto& [cname, resources] : *which) {
      if (resources.empty()) continue;
      std::string list;
      for (const auto& r : resources) list += (list.empty() ? "" : ", ") + r;
      note += (note.empty() ? "" : "; ") + list + (which == &set_requests ? " request" : " limit") + " for container " + cname;
    }
  if (!note.empty())
    (void)json::set_string(pod, "/metadata/annotations/kubernetes.io~1limit-ranger", "LimitRanger plugin set: " + note);
}

std::optional<std::string> quota_refusal(const Value& pod, const std::vector<const Value*>& quotas,
                                         const std::vector<const Value*>& namespace_pods) {
  for (const Value* q : quotas) {
    const Value* hard = json::find(*q, "/spec/hard");
    if (hard == nullptr || !hard->IsObject()) continue;
    std::string qname = sget(*q, "/metadata/name");
    // A tracked compute resource the pod does not state cannot be charged.
    std::vector<std::string> missing;
    for (auto m = hard->MemberBegin(); m != hard->MemberEnd(); ++m) {
      auto cr = compute_resource(std::string(json::view(m->name)));
      if (!cr) continue;
      std::string pointer = "/resources/" + cr->first + "/" + cr->second;
      std::string names;
      if (const Value* cs = json::find(pod, "/spec/containers"); cs && cs->IsArray())
        for (const auto& c : cs->GetArray())
          if (json::find(c, pointer) == nullptr) names += (names.empty() ? "" : ",") + sget(c, "/name");
      if (!names.empty()) missing.push_back(cr->first + "." + cr->second + " for: " + names);
    }
    if (!missing.empty()) {
      std::string text;
      for (const auto& m : missing) text += (text.empty() ? "" : "; ") + m;
      return "failed quota: " + qname + ": must specify " + text;
    }
    std::map<std::string, std::string> requested, used, limited;
    for (auto m = hard->MemberBegin(); m != hard->MemberEnd(); ++m) {
      std::string name(json::view(m->name));
      Quantity want;
      if (counts_pods(name))
        want = Quantity::from_int(1);
      else if (auto cr = compute_resource(name))
        want = pod_amount(pod, cr->first, cr->second);
      else
        continue;
      auto limit = Quantity::from_json(m->value);
      if (!limit) continue;
      Quantity now = used_of(name, namespace_pods);
      if (now + want > *limit) {
        requested[name] = want.to_string();
        used[name] = now.to_string();
        limited[name] = limit->to_string();
      }
    }
    if (!requested.empty())
      return "exceeded quota: " + qname + ", requested: " + joined(requested) + ", used: " + joined(used) +
             ", limited: " + joined(limited);
  }
  return std::nullopt;
}

json::Document quota_usage(const Value& quota, const std::vector<const Value*>& namespace_pods) {
  auto used = json::Document::object();
  const Value* hard = json::find(quota, "/spec/hard");
  if (hard == nullptr || !hard->IsObject()) return used;
  for (auto m = hard->MemberBegin(); m != hard->MemberEnd(); ++m) {
    std::string name(json::view(m->name));
    if (!counts_pods(name) && !compute_resource(name)) continue;
    (void)json::set_string(used, "/" + json::escape_pointer_token(name), used_of(name, namespace_pods).to_string());
  }
  return used;
}

}  // namespace unitrain::localcluster
