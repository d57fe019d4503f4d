// The fixture the framework integration tests share: an in-process local cluster (API server,
// simulated kubelet, scheduler, GC, batch Job controller), a REST client to it, every framework
// registered, and helpers to read what the operator wrote.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
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
#include "frameworks/mxnet/register.h"
#include "frameworks/paddle/register.h"
#include "frameworks/pytorch/register.h"
#include "frameworks/tensorflow/register.h"
#include "frameworks/xgboost/register.h"
#include "localcluster/controllers/controllers.h"
#include "localcluster/local_cluster.h"
#include "tests/support/eventually.h"
#include "tests/support/local_cluster.h"

namespace unitrain::testing {

namespace c = unitrain::controller;
namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace kube = unitrain::kube;
namespace lc = unitrain::localcluster;

// "NAME=value " per env entry of container `index`; a downward-API entry prints as
// "NAME<-fieldPath ".
inline std::string env_of(const json::Value& pod, size_t index = 0) {
  std::string out;
  const json::Value* env = json::find(pod, fmt::format("/spec/containers/{}/env", index));
  if (env == nullptr || !env->IsArray()) return out;
  for (const auto& e : env->GetArray()) {
    const std::string name(json::get_string(e, "/name").value_or(""));
    if (auto path = json::get_string(e, "/valueFrom/fieldRef/fieldPath")) out += fmt::format("{}<-{} ", name, *path);
    else out += fmt::format("{}={} ", name, json::get_string(e, "/value").value_or(""));
  }
  return out;
}

// The value of one env variable of container `index`, or "<unset>".
inline std::string env_value(const json::Value& pod, std::string_view var, size_t index = 0) {
  const json::Value* env = json::find(pod, fmt::format("/spec/containers/{}/env", index));
  if (env == nullptr || !env->IsArray()) return "<unset>";
  for (const auto& e : env->GetArray())
    if (json::get_string(e, "/name") == var) return std::string(json::get_string(e, "/value").value_or(""));
  return "<unset>";
}

struct LocalClusterFixture {
  lc::LocalCluster cluster{lc::LocalClusterOptions{}};
  std::unique_ptr<lc::controllers::Controllers> controllers;
  std::unique_ptr<kube::RestClient> client;
  kube::RealClock clock;
  RecordingSink events;
  fw::Registry registry;

  LocalClusterFixture() {
    REQUIRE(cluster.start());
    lc::controllers::ControllersOptions o;
    o.kubelet_options.restart_backoff = std::chrono::milliseconds(0);  // restarts in place at once
    controllers = std::make_unique<lc::controllers::Controllers>(cluster.store(), o);
    auto rc = kube::RestClient::create(rest_config_of(cluster));
    REQUIRE(rc);
    client = std::move(*rc);
    for (auto reg : {&frameworks::tensorflow::register_tensorflow, &frameworks::pytorch::register_pytorch,
                     &frameworks::mxnet::register_mxnet, &frameworks::xgboost::register_xgboost,
                     &frameworks::paddle::register_paddle, &frameworks::mpi::v2::register_mpi_v2}) {
      REQUIRE(reg(registry));
    }
  }

  // `file` under manifests/crds.
  void install_crd(const std::string& file) {
    auto installed = install_crds(*client, std::string(UNITRAIN_SOURCE_DIR) + "/manifests/crds/" + file);
    if (!installed) FAIL(installed.error().message);
  }

  std::unique_ptr<c::JobController> controller(std::string_view name, fw::PluginConfig config = {}) {
    auto plugin = registry.instantiate(name, config);
    REQUIRE(plugin);
    auto ctl = std::make_unique<c::JobController>(*client, clock, events, std::move(*plugin), c::JobControllerOptions{});
    ctl->start();
    REQUIRE(ctl->wait_for_sync(std::chrono::seconds(10)));
    return ctl;
  }

  // Types of the True conditions, in order, each followed by a space.
  std::string condition_types(const kube::GroupVersionResource& r, std::string_view name, std::string_view ns = "default") {
    auto obj = client->get(r, ns, name);
    if (!obj) return "";
    std::string out;
    if (const json::Value* conds = json::find(obj->root(), "/status/conditions"))
      for (const auto& cond : conds->GetArray())
        if (json::get_string(cond, "/status") == "True") out += std::string(json::get_string(cond, "/type").value_or("")) + " ";
    return out;
  }

  bool has_condition(const kube::GroupVersionResource& r, std::string_view name, std::string_view type) {
    return condition_types(r, name).find(std::string(type) + " ") != std::string::npos;
  }

  // The message of the condition of `type`, or "".
  std::string condition_message(const kube::GroupVersionResource& r, std::string_view name, std::string_view type) {
    auto obj = client->get(r, "default", name);
    if (!obj) return "";
    if (const json::Value* conds = json::find(obj->root(), "/status/conditions"))
      for (const auto& cond : conds->GetArray())
        if (json::get_string(cond, "/type") == type) return std::string(json::get_string(cond, "/message").value_or(""));
    return "";
  }

  std::string pod_phase(std::string_view name) {
    auto pod = client->get({"", "v1", "pods"}, "default", name);
    return pod ? std::string(json::get_string(pod->root(), "/status/phase").value_or("")) : std::string("<absent>");
  }

  // Names of the job's pods (or services), sorted, each followed by a space.
  std::string children(std::string_view resource, std::string_view job) {
    kube::ListOptions o;
    o.label_selector = fmt::format("training.kubeflow.org/job-name={}", job);
    auto list = client->list({"", "v1", std::string(resource)}, "default", o);
    if (!list) return "<error>";
    std::vector<std::string> names;
    for (const auto& item : json::find(list->root(), "/items")->GetArray())
      if (json::find(item, "/metadata/deletionTimestamp") == nullptr)
        names.emplace_back(json::get_string(item, "/metadata/name").value_or(""));
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto& n : names) out += n + " ";
    return out;
  }
};

}  // namespace unitrain::testing
