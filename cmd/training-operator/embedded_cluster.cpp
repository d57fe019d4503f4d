#include "cmd/training-operator/embedded_cluster.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cmd/training-operator/controllers.h"
#include "core/framework/ascii.h"
#include "core/json/json.h"
#include "core/webhook/certs.h"
#include "localcluster/controllers/controllers.h"
#include "localcluster/controllers/podgroup_crds.h"

namespace fs = std::filesystem;

namespace unitrain::operator_cmd {

namespace {

const kube::GroupVersionResource kCrds{"apiextensions.k8s.io", "v1", "customresourcedefinitions"};

std::string executable_dir() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

// --crd-dir, else the source tree next to the build directory (build/bin/../../manifests/crds).
std::string find_crd_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  for (auto candidate : {fs::path(executable_dir()) / ".." / ".." / "manifests" / "crds",
                         fs::path(UNITRAIN_SOURCE_DIR) / "manifests" / "crds"}) {
    std::error_code ec;
    if (fs::is_directory(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
  }
  return {};
}

// Keeps only the enabled modules' versions of a CRD document (one of them the storage version)
// and sets its conversion webhook when it serves several.
Status trim_versions(json::Document& doc, const std::string& crd_name, const std::string& path,
                     const std::vector<const framework::Registration*>& regs, const std::string& convert_url,
                     const std::string& ca_cert) {
  json::Value* versions = json::find(doc.root(), "/spec/versions");
  if (versions == nullptr || !versions->IsArray()) return {};
  json::Value kept(rapidjson::kArrayType);
  bool storage = false;
  for (auto& v : versions->GetArray()) {
    auto name = json::get_string(v, "/name");
    const bool on =
        name && std::any_of(regs.begin(), regs.end(), [&](const auto* r) { return r->descriptor.version == *name; });
    if (!on) continue;
    storage |= json::get_bool(v, "/storage").value_or(false);
    kept.PushBack(json::Value(v, doc.alloc()), doc.alloc());
  }
  if (kept.Empty()) return fail(fmt::format("{}: serves no version of {}", path, regs.front()->descriptor.name));
  if (!storage) kept[0]["storage"].SetBool(true);
  const bool several = kept.Size() > 1;
  *versions = std::move(kept);
  if (!several) {
    json::remove(doc, "/spec/conversion");
    return {};
  }
  if (convert_url.empty())
    return fail(fmt::format("{} serves {} versions and needs the conversion webhook; do not disable webhooks", crd_name,
                            regs.size()));
  auto conversion = json::Document::parse(fmt::format(
      R"({{"strategy":"Webhook","webhook":{{"conversionReviewVersions":["v1"],"clientConfig":{{"url":"{}","caBundle":"{}"}}}}}})",
      convert_url, webhook::base64_encode(ca_cert)));
  return json::set(doc, "/spec/conversion", json::Value(conversion->root(), doc.alloc()));
}

// The CRD serves once established; the controllers' first list must not race it.
Status wait_served(kube::Client& client, const framework::Registration& reg, const std::string& path,
                   std::stop_token stopping) {
  std::mutex mu;
  std::condition_variable_any cv;
  for (int i = 0;; ++i) {
    kube::ListOptions one;
    one.limit = 1;
    if (client.list(reg.descriptor.resource(), "", one)) return {};
    if (i == 100) return fail(fmt::format("{} is not served 10 s after installing {}", reg.descriptor.name, path));
    std::unique_lock lock(mu);
    if (cv.wait_for(lock, stopping, std::chrono::milliseconds(100), [] { return false; }) || stopping.stop_requested())
      return fail(fmt::format("stopped while waiting for {} to be served", reg.descriptor.name));
  }
}

class Setup final : public manager::Runnable {
 public:
  Setup(kube::Client& client, const framework::Registry& registry, const Flags& flags, const OperatorWebhooks* webhooks,
        std::string kubeconfig)
      : client_(client), registry_(registry), flags_(flags), webhooks_(webhooks), kubeconfig_(std::move(kubeconfig)) {}

  Status start(std::stop_token stopping) override {
    std::string convert_url, ca;
    if (webhooks_) {
      if (auto s = webhooks_->wait_ready(stopping, std::chrono::seconds(30)); !s) return s;
      const std::string url = fmt::format("https://127.0.0.1:{}", webhooks_->port());
      convert_url = url + std::string(webhook::kConvertPath);
      ca = webhooks_->ca_cert();
      if (auto s = register_webhook_configurations(client_, webhooks_->handler(), url, ca); !s) {
        // A cluster without admission webhooks still runs jobs: --mpi-default-version routes them.
        spdlog::warn("webhook configurations not registered: {}", s.error().message);
      } else {
        spdlog::info("registered webhook configurations {} and {} at {}", webhook::kValidatingConfigurationName,
                     webhook::kMutatingConfigurationName, url);
      }
    }
    // Without a manifests/crds directory, each module's own CRD (compiled into it) is installed.
    const auto dir = find_crd_dir(flags_.crd_dir);
    std::error_code ec;
    if (!flags_.crd_dir.empty() && !fs::is_directory(flags_.crd_dir, ec))
      return fail(fmt::format("--crd-dir: {} is not a directory", flags_.crd_dir));
    std::vector<const framework::Registration*> enabled;
    for (const auto& name : flags_.enabled) enabled.push_back(registry_.find(name));
    if (auto s = install_crds(client_, dir, enabled, convert_url, ca, stopping); !s) return s;
    std::cout << "kubeconfig " << kubeconfig_ << std::endl;
    return {};
  }
  void stop() override {}

 private:
  kube::Client& client_;
  const framework::Registry& registry_;
  const Flags& flags_;
  const OperatorWebhooks* webhooks_;
  std::string kubeconfig_;
};

}  // namespace

Result<std::unique_ptr<EmbeddedCluster>> EmbeddedCluster::launch(const Flags& f) {
  localcluster::LocalClusterOptions lo;
  lo.listen = f.embedded_cluster.empty() ? "127.0.0.1:0" : f.embedded_cluster;
  std::string out = f.kubeconfig_out;
  if (out.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    out = fmt::format("{}/unitrain-operator-{}/kubeconfig", tmp && *tmp ? tmp : "/tmp", getpid());
  }
  std::error_code ec;
  fs::create_directories(fs::path(out).parent_path(), ec);
  lo.kubeconfig_out = out;
  // The kubelet's output goes to the cluster's server for `kubectl logs`; the cluster exists
  // before start() attaches the controllers.
  auto self = std::make_shared<localcluster::LocalCluster*>(nullptr);
  // With --gang-scheduler-name the cluster gets that scheduler's PodGroup CRD and the scheduler
  // emulation serves its name, as a cluster admin installs Volcano or scheduler-plugins.
  const std::string gang = f.gang_scheduler_name;
  const bool volcano = framework::ascii::iequals(gang, "volcano");
  lo.attach = [self, gang, volcano](localcluster::Store& store) -> std::shared_ptr<void> {
    localcluster::controllers::ControllersOptions co;
    if (!gang.empty()) {
      if (auto s = localcluster::controllers::install_podgroup_crds(store, {volcano, !volcano}); !s)
        spdlog::error("--embedded-cluster: {}", s.error().message);
      if (!volcano) co.scheduler_options.scheduler_plugins_name = gang;
    }
    co.kubelet_options.log = [self](const localcluster::ContainerLogLine& line) {
      if (*self != nullptr) (*self)->append_pod_log(line);
    };
    return std::make_shared<localcluster::controllers::Controllers>(store, std::move(co));
  };
  auto cluster = std::make_unique<localcluster::LocalCluster>(lo);
  *self = cluster.get();
  if (auto s = cluster->start(); !s) return fail("--embedded-cluster: " + s.error().message);
  spdlog::info("embedded cluster serving at {}", cluster->url());
  return std::make_unique<EmbeddedCluster>(PassKey<EmbeddedCluster>{}, std::move(cluster));
}

Result<kube::RestConfig> EmbeddedCluster::rest_config() const {
  return kube::load_kubeconfig(kube::KubeconfigOptions{{cluster_->kubeconfig_path()}, ""});
}

std::unique_ptr<manager::Runnable> EmbeddedCluster::setup(kube::Client& client, const framework::Registry& registry,
                                                          const Flags& flags, const OperatorWebhooks* webhooks) const {
  return std::make_unique<Setup>(client, registry, flags, webhooks, cluster_->kubeconfig_path());
}

Status install_crds(kube::Client& client, const std::string& dir,
                    const std::vector<const framework::Registration*>& enabled, const std::string& convert_url,
                    const std::string& ca_cert, std::stop_token stopping) {
  std::vector<std::pair<std::string, std::vector<const framework::Registration*>>> crds;  // by "<plural>.<group>"
  for (const auto* reg : enabled) {
    const std::string name = reg->descriptor.plural + "." + reg->descriptor.group;
    auto it = std::find_if(crds.begin(), crds.end(), [&](const auto& c) { return c.first == name; });
    if (it == crds.end()) crds.push_back({name, {reg}});
    else it->second.push_back(reg);
  }
  for (const auto& [crd_name, regs] : crds) {
    const auto& d = regs.front()->descriptor;
    auto path = fs::path(dir) / crd_file_name(d, "");
    if (auto versioned = fs::path(dir) / crd_file_name(d, d.version);
        regs.size() == 1 && fs::exists(versioned))
      path = versioned;
    std::ifstream in(path);
    std::stringstream text;
    if (!dir.empty() && in) {
      text << in.rdbuf();
    } else if (regs.size() == 1 && !regs.front()->crds.empty()) {
      // A module's own CRD: a module loaded at run time, or a built-in one the directory lacks.
      path = fmt::format("the CRD of {} ({})", d.name, regs.front()->origin);
      text << regs.front()->crds.front();
    } else {
      return fail(fmt::format("--crd-dir: {} for {} cannot be read", path.string(), d.name));
    }
    auto docs = json::parse_yaml(text.str());
    if (!docs) return fail(fmt::format("{}: {}", path.string(), docs.error().message));
    for (auto& doc : *docs) {
      if (auto s = trim_versions(doc, crd_name, path.string(), regs, convert_url, ca_cert); !s) return s;
      auto created = client.create(kCrds, "", doc.root());
      if (!created && !created.error().is(kube::ApiError::Reason::AlreadyExists))
        return fail(fmt::format("installing {}: {}", path.string(), created.error().to_string()));
    }
    for (const auto* reg : regs) {
      if (auto s = wait_served(client, *reg, path.string(), stopping); !s) return s;
    }
    spdlog::info("installed CRD {} from {}", crd_name, path.string());
  }
  // The other kinds a module serves beside its own (a TrainJob's runtimes), from the module.
  for (const auto* reg : enabled) {
    for (std::size_t i = 1; i < reg->crds.size(); ++i) {
      auto docs = json::parse_yaml(reg->crds[i]);
      if (!docs) return fail(fmt::format("CRD {} of {}: {}", i, reg->descriptor.name, docs.error().message));
      for (auto& doc : *docs) {
        auto created = client.create(kCrds, "", doc.root());
        if (!created && !created.error().is(kube::ApiError::Reason::AlreadyExists))
          return fail(fmt::format("installing CRD {} of {}: {}", json::string_at(doc.root(), "/metadata/name"),
                                  reg->descriptor.name, created.error().to_string()));
        spdlog::info("installed CRD {} from {}", json::string_at(doc.root(), "/metadata/name"), reg->descriptor.name);
      }
    }
  }
  return {};
}

}  // namespace unitrain::operator_cmd
