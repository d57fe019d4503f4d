#include "localcluster/builtin_defaults.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "core/base/base64.h"

namespace unitrain::localcluster {
namespace {

using json::Document;
using json::Value;

void default_if_missing(Value& obj, const char* name, Value v, json::Allocator& a) {
  if (!obj.IsObject() || obj.HasMember(name)) return;
  obj.AddMember(Value(name, a), v, a);
}

void default_containers(Value& spec, const char* field, json::Allocator& a) {
  auto it = spec.FindMember(field);
  if (it == spec.MemberEnd() || !it->value.IsArray()) return;
  for (Value& c : it->value.GetArray()) {
    if (!c.IsObject()) continue;
    default_if_missing(c, "terminationMessagePath", Value("/dev/termination-log"), a);
    default_if_missing(c, "terminationMessagePolicy", Value("File"), a);
    if (!c.HasMember("imagePullPolicy")) {
      std::string image = json::string_at(c, "/image");
      std::string_view last = image;
      if (auto slash = last.rfind('/'); slash != std::string_view::npos) last = last.substr(slash + 1);
      bool latest = last.find('@') == std::string_view::npos &&
                    (last.find(':') == std::string_view::npos || last.substr(last.find(':')) == ":latest");
      c.AddMember("imagePullPolicy", Value(rapidjson::StringRef(latest ? "Always" : "IfNotPresent")), a);
    }
    default_if_missing(c, "resources", Value(rapidjson::kObjectType), a);
    if (auto p = c.FindMember("ports"); p != c.MemberEnd() && p->value.IsArray()) {
      for (Value& port : p->value.GetArray()) default_if_missing(port, "protocol", Value("TCP"), a);
    }
  }
}

void default_pod_spec(Value& spec, json::Allocator& a) {
  if (!spec.IsObject()) return;
  default_if_missing(spec, "restartPolicy", Value("Always"), a);
  default_if_missing(spec, "terminationGracePeriodSeconds", Value(30), a);
  default_if_missing(spec, "dnsPolicy", Value("ClusterFirst"), a);
  default_if_missing(spec, "securityContext", Value(rapidjson::kObjectType), a);
  default_if_missing(spec, "schedulerName", Value("default-scheduler"), a);
  default_if_missing(spec, "enableServiceLinks", Value(true), a);
  default_containers(spec, "containers", a);
  default_containers(spec, "initContainers", a);
}

// A rolling-update block with both bounds, as apps/v1 defaults them.
void default_rolling_update(Value& strategy, const char* surge, const char* unavailable, json::Allocator& a) {
  default_if_missing(strategy, "type", Value("RollingUpdate"), a);
  if (json::view(strategy["type"]) != "RollingUpdate") return;
  default_if_missing(strategy, "rollingUpdate", Value(rapidjson::kObjectType), a);
  Value& ru = strategy["rollingUpdate"];
  auto bound = [&a](const char* v) {
    if (v[0] != '\0' && v[std::char_traits<char>::length(v) - 1] == '%') return Value(v, a);
    return Value(std::atoi(v));
  };
  default_if_missing(ru, "maxSurge", bound(surge), a);
  default_if_missing(ru, "maxUnavailable", bound(unavailable), a);
}

// kube-apiserver's defaults of apps/v1 Deployments, ReplicaSets, StatefulSets and DaemonSets.
void default_workload(const std::string& resource, Value& root, json::Allocator& a) {
  Value* spec = json::find(root, "/spec");
  if (spec == nullptr || !spec->IsObject()) return;
  if (resource != "daemonsets") default_if_missing(*spec, "replicas", Value(1), a);
  if (resource != "replicasets") default_if_missing(*spec, "revisionHistoryLimit", Value(10), a);
  if (resource == "deployments") {
    default_if_missing(*spec, "progressDeadlineSeconds", Value(600), a);
    default_if_missing(*spec, "strategy", Value(rapidjson::kObjectType), a);
    if ((*spec)["strategy"].IsObject()) default_rolling_update((*spec)["strategy"], "25%", "25%", a);
  } else if (resource == "daemonsets") {
    default_if_missing(*spec, "updateStrategy", Value(rapidjson::kObjectType), a);
    if ((*spec)["updateStrategy"].IsObject()) default_rolling_update((*spec)["updateStrategy"], "0", "1", a);
  } else if (resource == "statefulsets") {
    default_if_missing(*spec, "podManagementPolicy", Value("OrderedReady"), a);
    default_if_missing(*spec, "updateStrategy", Value(rapidjson::kObjectType), a);
    Value& us = (*spec)["updateStrategy"];
    if (us.IsObject()) {
      default_if_missing(us, "type", Value("RollingUpdate"), a);
      if (us["type"].IsString() && json::view(us["type"]) == "RollingUpdate") {
        default_if_missing(us, "rollingUpdate", Value(rapidjson::kObjectType), a);
        if (us["rollingUpdate"].IsObject()) default_if_missing(us["rollingUpdate"], "partition", Value(0), a);
      }
    }
    if (!spec->HasMember("persistentVolumeClaimRetentionPolicy")) {
      Value p(rapidjson::kObjectType);
      p.AddMember("whenDeleted", "Retain", a);
      p.AddMember("whenScaled", "Retain", a);
      spec->AddMember("persistentVolumeClaimRetentionPolicy", p, a);
    }
    if (auto v = spec->FindMember("volumeClaimTemplates"); v != spec->MemberEnd() && v->value.IsArray())
      for (Value& t : v->value.GetArray())
        if (Value* ts = json::find(t, "/spec"); ts && ts->IsObject()) default_if_missing(*ts, "volumeMode", Value("Filesystem"), a);
  }
  if (Value* ps = json::find(root, "/spec/template/spec")) default_pod_spec(*ps, a);
}

}  // namespace

std::string qos_class(const Value& spec) {
  bool any = false, guaranteed = true;
  const Value* cs = json::find(spec, "/containers");
  if (cs == nullptr || !cs->IsArray()) return "BestEffort";
  for (const Value& c : cs->GetArray()) {
    const Value* req = json::find(c, "/resources/requests");
    const Value* lim = json::find(c, "/resources/limits");
    bool has_req = req != nullptr && req->IsObject() && req->MemberCount() > 0;
    bool has_lim = lim != nullptr && lim->IsObject() && lim->MemberCount() > 0;
    any = any || has_req || has_lim;
    for (const char* res : {"cpu", "memory"}) {
      const Value* l = has_lim ? json::find(*lim, std::string("/") + res) : nullptr;
      const Value* r = has_req ? json::find(*req, std::string("/") + res) : nullptr;
      if (l == nullptr || (r != nullptr && !json::equal(*r, *l))) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

void default_builtin(const ResourceInfo& r, Document& d, std::mt19937_64& rng) {
  auto& a = d.alloc();
  Value& root = d.root();
  if (r.group.empty() && r.resource == "pods") {
    if (Value* spec = json::find(root, "/spec")) default_pod_spec(*spec, a);
  } else if (r.group.empty() && r.resource == "services") {
    Value* spec = json::find(root, "/spec");
    if (spec == nullptr || !spec->IsObject()) {
      (void)json::set(d, "/spec", Value(rapidjson::kObjectType));
      spec = json::find(d.root(), "/spec");
    }
    default_if_missing(*spec, "type", Value("ClusterIP"), a);
    default_if_missing(*spec, "sessionAffinity", Value("None"), a);
    if (!spec->HasMember("clusterIP")) {
      std::uniform_int_distribution<int> dist(1, 254);
      std::string ip = "10.96." + std::to_string(dist(rng)) + "." + std::to_string(dist(rng));
      spec->AddMember("clusterIP", json::str(ip, a), a);
    }
    if (!spec->HasMember("clusterIPs")) {
      Value ips(rapidjson::kArrayType);
      ips.PushBack(Value((*spec)["clusterIP"], a), a);
      spec->AddMember("clusterIPs", ips, a);
    }
    default_if_missing(*spec, "internalTrafficPolicy", Value("Cluster"), a);
    if (!spec->HasMember("ipFamilies")) {
      Value fam(rapidjson::kArrayType);
      fam.PushBack("IPv4", a);
      spec->AddMember("ipFamilies", fam, a);
    }
    default_if_missing(*spec, "ipFamilyPolicy", Value("SingleStack"), a);
    if (auto p = spec->FindMember("ports"); p != spec->MemberEnd() && p->value.IsArray()) {
      for (Value& port : p->value.GetArray()) {
        if (!port.IsObject()) continue;
        default_if_missing(port, "protocol", Value("TCP"), a);
        if (!port.HasMember("targetPort") && port.HasMember("port")) {
          port.AddMember("targetPort", Value(port["port"], a), a);
        }
      }
    }
  } else if (r.group.empty() && r.resource == "secrets") {
    if (!root.HasMember("type")) root.AddMember("type", "Opaque", a);
    // stringData is write-only: kube-apiserver folds it into data.
    if (auto sd = root.FindMember("stringData"); sd != root.MemberEnd()) {
      if (sd->value.IsObject()) {
        if (!root.HasMember("data") || !root["data"].IsObject()) {
          root.RemoveMember("data");
          root.AddMember("data", Value(rapidjson::kObjectType), a);
        }
        Value& data = root["data"];
        for (auto it = root["stringData"].MemberBegin(); it != root["stringData"].MemberEnd(); ++it) {
          if (!it->value.IsString()) continue;
          std::string enc = base64_encode(json::view(it->value));
          data.RemoveMember(it->name);
          data.AddMember(Value(it->name, a), json::str(enc, a), a);
        }
      }
      root.RemoveMember("stringData");
    }
  } else if (r.group.empty() && r.resource == "namespaces") {
    std::string name = json::string_at(root, "/metadata/name");
    if (!name.empty()) (void)json::set_string(d, "/metadata/labels/" + json::escape_pointer_token("kubernetes.io/metadata.name"), name);
    if (json::find(d.root(), "/spec/finalizers") == nullptr) {
      Value f(rapidjson::kArrayType);
      f.PushBack("kubernetes", a);
      (void)json::set(d, "/spec/finalizers", std::move(f));
    }
  } else if (r.group == "apps") {
    default_workload(r.resource, root, a);
  } else if (r.group.empty() && r.resource == "persistentvolumeclaims") {
    if (Value* spec = json::find(root, "/spec")) default_if_missing(*spec, "volumeMode", Value("Filesystem"), a);
  } else if (r.group.empty() && r.resource == "persistentvolumes") {
    if (Value* spec = json::find(root, "/spec")) {
      default_if_missing(*spec, "volumeMode", Value("Filesystem"), a);
      default_if_missing(*spec, "persistentVolumeReclaimPolicy", Value("Retain"), a);
    }
  } else if (r.group == "storage.k8s.io" && r.resource == "storageclasses") {
    default_if_missing(root, "reclaimPolicy", Value("Delete"), a);
    default_if_missing(root, "volumeBindingMode", Value("Immediate"), a);
  } else if (r.group == "batch" && r.resource == "jobs") {
    Value* spec = json::find(root, "/spec");
    if (spec == nullptr || !spec->IsObject()) return;
    if (!spec->HasMember("completions") && !spec->HasMember("parallelism")) spec->AddMember("completions", 1, a);
    default_if_missing(*spec, "parallelism", Value(1), a);
    default_if_missing(*spec, "backoffLimit", Value(6), a);
    default_if_missing(*spec, "completionMode", Value("NonIndexed"), a);
    default_if_missing(*spec, "suspend", Value(false), a);
    default_if_missing(*spec, "manualSelector", Value(false), a);
    default_if_missing(*spec, "podReplacementPolicy", Value("TerminatingOrFailed"), a);
    if (Value* ps = json::find(d.root(), "/spec/template/spec")) default_pod_spec(*ps, a);
  }
}

void default_job_selector(Document& d) {
  if (json::get_bool(d.root(), "/spec/manualSelector").value_or(false)) return;
  if (json::find(d.root(), "/spec/selector") != nullptr) return;
  std::string uid = json::string_at(d.root(), "/metadata/uid");
  std::string name = json::string_at(d.root(), "/metadata/name");
  auto esc = [](std::string_view k) { return json::escape_pointer_token(k); };
  (void)json::set_string(d, "/spec/selector/matchLabels/" + esc("batch.kubernetes.io/controller-uid"), uid);
  for (auto [k, v] : {std::pair<std::string_view, std::string>{"batch.kubernetes.io/controller-uid", uid},
                      {"batch.kubernetes.io/job-name", name},
                      {"controller-uid", uid},
                      {"job-name", name}}) {
    (void)json::set_string(d, "/spec/template/metadata/labels/" + esc(k), v);
  }
}

}  // namespace unitrain::localcluster
