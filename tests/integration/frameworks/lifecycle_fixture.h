// What the local-cluster integration tests of the job-controller core share: an in-process local
// cluster (real HTTP API server, watches, scheduler, kubelet, GC, batch Job controller), a REST
// client, the framework registry, and the API server's own count of writes.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/controller/job_controller.h"
#include "core/framework/registry.h"
#include "core/kube/rest_client.h"
#include "frameworks/mpi/v2/register.h"
#include "frameworks/pytorch/register.h"
#include "localcluster/controllers/controllers.h"
#include "localcluster/controllers/podgroup_crds.h"
#include "localcluster/local_cluster.h"
#include "tests/support/eventually.h"
#include "tests/support/local_cluster.h"

namespace unitrain::testing {

namespace c = unitrain::controller;
namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace kube = unitrain::kube;
namespace lc = unitrain::localcluster;

inline const kube::GroupVersionResource kPyTorchJobs{"kubeflow.org", "v1", "pytorchjobs"};
inline const kube::GroupVersionResource kMPIJobs{"kubeflow.org", "v2beta1", "mpijobs"};
inline const kube::GroupVersionResource kPodsR{"", "v1", "pods"};
inline const kube::GroupVersionResource kServicesR{"", "v1", "services"};
inline const kube::GroupVersionResource kConfigMapsR{"", "v1", "configmaps"};
inline const kube::GroupVersionResource kSecretsR{"", "v1", "secrets"};
inline const kube::GroupVersionResource kBatchJobsR{"batch", "v1", "jobs"};
inline const kube::GroupVersionResource kVolcanoPodGroups{"scheduling.volcano.sh", "v1beta1", "podgroups"};
inline const kube::GroupVersionResource kPluginsPodGroups{"scheduling.x-k8s.io", "v1alpha1", "podgroups"};
inline const kube::GroupVersionResource kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses"};

struct ClusterOptions {
  bool manual_kubelet = false;
  bool podgroup_crds = false;
};

struct Cluster {
  lc::LocalCluster cluster{lc::LocalClusterOptions{}};
  std::unique_ptr<lc::controllers::Controllers> controllers;
  std::unique_ptr<kube::RestClient> client;
  kube::RealClock clock;
  RecordingSink events;
  fw::Registry registry;

  explicit Cluster(ClusterOptions opts = {}) {
    REQUIRE(cluster.start());
    if (opts.podgroup_crds) REQUIRE(lc::controllers::install_podgroup_crds(cluster.store()));
    lc::controllers::ControllersOptions o;
    o.kubelet_options.manual = opts.manual_kubelet;
    o.kubelet_options.restart_backoff = std::chrono::milliseconds(0);  // restarts in place at once
    controllers = std::make_unique<lc::controllers::Controllers>(cluster.store(), o);
    auto rc = kube::RestClient::create(rest_config_of(cluster));
    REQUIRE(rc);
    client = std::move(*rc);
    REQUIRE(unitrain::frameworks::pytorch::register_pytorch(registry));
    REQUIRE(unitrain::frameworks::mpi::v2::register_mpi_v2(registry));
  }

  // `file` under manifests/crds.
  void install_crd(const std::string& file) {
    auto installed = install_crds(*client, std::string(UNITRAIN_SOURCE_DIR) + "/manifests/crds/" + file);
    if (!installed) FAIL(installed.error().message);
  }

  std::unique_ptr<c::JobController> controller(std::string_view name, c::JobControllerOptions options = {},
                                                fw::PluginConfig config = {}) {
    auto plugin = registry.instantiate(name, config);
    REQUIRE(plugin);
    auto ctl = std::make_unique<c::JobController>(*client, clock, events, std::move(*plugin), std::move(options));
    ctl->start();
    REQUIRE(ctl->wait_for_sync(std::chrono::seconds(10)));
    return ctl;
  }

  void create_yaml(const kube::GroupVersionResource& r, const std::string& yaml) {
    auto docs = json::parse_yaml(yaml);
    REQUIRE(docs);
    for (const auto& d : *docs) {
      auto created = client->create(r, std::string(json::get_string(d.root(), "/metadata/namespace").value_or("")), d.root());
      INFO((created ? std::string() : created.error().message));
      REQUIRE(created);
    }
  }

  std::optional<json::Document> get(const kube::GroupVersionResource& r, std::string_view name) {
    auto obj = client->get(r, "default", name);
    if (!obj) return std::nullopt;
    return std::move(*obj);
  }
  bool exists(const kube::GroupVersionResource& r, std::string_view name) { return get(r, name).has_value(); }
  // Present and not being deleted.
  bool live(const kube::GroupVersionResource& r, std::string_view name) {
    auto o = get(r, name);
    return o && !json::find(o->root(), "/metadata/deletionTimestamp");
  }

  // Names of the objects of a resource in "default", sorted, skipping ones being deleted.
  std::vector<std::string> names(const kube::GroupVersionResource& r) {
    std::vector<std::string> out;
    auto list = client->list(r, "default", {});
    if (!list) return out;
    if (const json::Value* items = json::find(list->root(), "/items"))
      for (const auto& it : items->GetArray())
        if (!json::find(it, "/metadata/deletionTimestamp")) out.emplace_back(json::get_string(it, "/metadata/name").value_or(""));
    std::sort(out.begin(), out.end());
    return out;
  }

  // "Type=Status(Reason: message)" for every condition, in order.
  std::string conditions(const kube::GroupVersionResource& r, std::string_view name) {
    auto obj = get(r, name);
    if (!obj) return "<gone>";
    std::string out;
    if (const json::Value* conds = json::find(obj->root(), "/status/conditions"))
      for (const auto& cond : conds->GetArray())
        out += fmt::format("{}={}({}: {}) ", json::get_string(cond, "/type").value_or(""), json::get_string(cond, "/status").value_or(""),
                           json::get_string(cond, "/reason").value_or(""), json::get_string(cond, "/message").value_or(""));
    return out;
  }
  // Types of the True conditions, in order.
  std::string true_conditions(const kube::GroupVersionResource& r, std::string_view name) {
    auto obj = get(r, name);
    if (!obj) return "<gone>";
    std::string out;
    if (const json::Value* conds = json::find(obj->root(), "/status/conditions"))
      for (const auto& cond : conds->GetArray())
        if (json::get_string(cond, "/status") == "True") out += std::string(json::get_string(cond, "/type").value_or("")) + " ";
    return out;
  }
  bool has_true(const kube::GroupVersionResource& r, std::string_view name, std::string_view type) {
    return true_conditions(r, name).find(std::string(type) + " ") != std::string::npos;
  }

  // Sets a pod's phase through the status subresource, as envtest-style tests do (manual kubelet).
  void set_pod_phase(std::string_view pod, std::string_view phase, std::optional<int> exit_code = std::nullopt,
                     std::string_view container = "pytorch") {
    for (int attempt = 0; attempt < 20; ++attempt) {
      auto obj = get(kPodsR, pod);
      REQUIRE(obj);
      auto& a = obj->alloc();
      json::Value status(rapidjson::kObjectType);
      status.AddMember("phase", json::Value(std::string(phase).c_str(), a), a);
      if (exit_code) {
        auto cs = json::Document::parse(fmt::format(
            R"([{{"name":"{}","ready":false,"restartCount":0,"image":"x","imageID":"","state":{{"terminated":{{"exitCode":{},"reason":"{}"}}}}}}])",
            container, *exit_code, *exit_code == 0 ? "Completed" : "Error"));
        REQUIRE(cs);
        status.AddMember("containerStatuses", json::clone(cs->root(), a), a);
      } else if (phase == "Running") {
        auto cs = json::Document::parse(fmt::format(
            R"([{{"name":"{}","ready":true,"restartCount":0,"image":"x","imageID":"","state":{{"running":{{}}}}}}])", container));
        REQUIRE(cs);
        status.AddMember("containerStatuses", json::clone(cs->root(), a), a);
      }
      obj->root().RemoveMember("status");
      obj->root().AddMember("status", status, a);
      auto r = client->update_status(kPodsR, "default", obj->root());
      if (r) return;
      if (!r.error().is(kube::ApiError::Reason::Conflict)) FAIL("pod status update: " << r.error().message);
    }
    FAIL("pod status update kept conflicting");
  }

  // Pods with phases, services and recorded events: context for a failed assertion.
  std::string dump() {
    std::string out = "pods:";
    auto list = client->list(kPodsR, "default", {});
    if (list)
      if (const json::Value* items = json::find(list->root(), "/items"))
        for (const auto& it : items->GetArray())
          out += fmt::format(" {}({}{})", json::get_string(it, "/metadata/name").value_or(""), json::get_string(it, "/status/phase").value_or(""),
                             json::find(it, "/metadata/deletionTimestamp") ? ",terminating" : "");
    out += "\nservices:";
    for (const auto& n : names(kServicesR)) out += " " + n;
    out += "\nevents:\n";
    for (const auto& e : events.events()) out += "  " + e + "\n";
    return out;
  }

  void patch_job(const kube::GroupVersionResource& r, std::string_view name, std::string_view merge_patch) {
    auto p = client->patch(r, "default", name, kube::PatchType::Merge, merge_patch);
    INFO((p ? std::string() : p.error().message));
    REQUIRE(p);
  }
};

}  // namespace unitrain::testing
