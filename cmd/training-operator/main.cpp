// build/bin/training-operator: one controller per enabled framework, with Kubeflow-compatible
// flags, leader election, /healthz, /readyz and /metrics, and an optional embedded local cluster.
// Logs go to stderr; with --embedded-cluster, stdout carries one line "kubeconfig <path>".
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cmd/training-operator/counting_client.h"
#include "cmd/training-operator/frameworks.h"
#include "cmd/training-operator/http_server.h"
#include "cmd/training-operator/logging.h"
#include "cmd/training-operator/operator_metrics.h"
#include "core/api/labels.h"
#include "cmd/training-operator/webhooks.h"
#include "core/controller/job_controller.h"
#include "core/framework/registry.h"
#include "core/gang/gang.h"
#include "core/kube/clock.h"
#include "core/kube/config.h"
#include "core/kube/event_recorder.h"
#include "core/kube/leader_election.h"
#include "core/kube/rest_client.h"
#include "localcluster/controllers/controllers.h"
#include "localcluster/local_cluster.h"

namespace fs = std::filesystem;
using namespace unitrain;
using operator_cmd::CountingClient;
using operator_cmd::HttpReply;
using operator_cmd::HttpServer;
using operator_cmd::OperatorMetrics;
using operator_cmd::parse_bind_address;

namespace {

constexpr int kUsageError = 2;

struct Flags {
  std::vector<std::string> enable_scheme;
  std::string gang_scheduler_name;
  std::vector<std::string> namespaces;
  int controller_threads = 1;
  bool leader_elect = false;
  std::string leader_election_id = "1ca428e5.training-operator.kubeflow.org";
  std::string leader_election_namespace;
  // Go durations (h, m or s), validated after parsing: lease > renew deadline > 1.2 * retry period.
  std::string leader_elect_lease_duration = "15s";
  std::string leader_elect_renew_deadline = "10s";
  std::string leader_elect_retry_period = "2s";
  std::string metrics_bind_address = ":8080";
  std::string health_probe_bind_address = ":8081";
  std::string kubeconfig;
  double kube_api_qps = 20;
  int kube_api_burst = 30;
  std::string zap_log_level = "info";
  std::string log_format = "text";
  std::string mpi_default_version = "v2beta1";
  std::string embedded_cluster;  // ADDR; set when the flag is given
  bool embedded = false;
  std::string crd_dir;
  std::string kubeconfig_out;
  std::map<std::string, std::string> framework_options;
  bool enable_webhooks = true;
  int webhook_server_port = 9443;
  bool webhook_port_given = false;
  std::string webhook_service_name = "training-operator";
  std::string webhook_namespace = "kubeflow";
  std::string webhook_secret_name = "training-operator-webhook-cert";
  std::string webhook_cert_validity = "87600h";
  bool webhook_persist_defaults = false;
};

// Go durations as the flags take them: a number and a unit, h, m or s ("87600h", "90s").
std::optional<std::chrono::seconds> parse_duration(const std::string& v) {
  if (v.size() < 2) return std::nullopt;
  const char unit = v.back();
  const std::string digits = v.substr(0, v.size() - 1);
  if (!std::all_of(digits.begin(), digits.end(), ::isdigit) || digits.size() > 9) return std::nullopt;
  const long n = std::stol(digits);
  if (n <= 0) return std::nullopt;
  if (unit == 'h') return std::chrono::hours(n);
  if (unit == 'm') return std::chrono::minutes(n);
  if (unit == 's') return std::chrono::seconds(n);
  return std::nullopt;
}

// EventSink over core/kube's recorder: the controller stays independent of how events are written.
class RecorderSink final : public controller::EventSink {
 public:
  explicit RecorderSink(kube::EventRecorder& recorder) : recorder_(recorder) {}
  void event(const json::Value& involved_object, std::string_view type, std::string_view reason,
             std::string message) override {
    recorder_.event(involved_object, type, reason, message);
  }

 private:
  kube::EventRecorder& recorder_;
};

// CLI11 validators over apimachinery's name rules; CLI11 prefixes the flag name to the message.
CLI::Validator kube_name(std::vector<std::string> (*rule)(std::string_view), const char* what) {
  return CLI::Validator(
      [rule, what](const std::string& v) -> std::string {
        auto errors = rule(v);
        return errors.empty() ? std::string() : fmt::format("\"{}\" is not a valid {}: {}", v, what, errors.front());
      },
      "NAME", what);
}

// Gang scheduling backends: "volcano" (any case, as upstream compares it) or the schedulerName of a
// scheduler-plugins scheduler, which pods carry in spec.schedulerName (a DNS-1123 subdomain).
std::string check_gang_scheduler(const std::string& v) {
  if (v.empty()) return {};
  std::string lower(v);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (lower == "volcano") return {};
  auto errors = api::validate_dns1123_subdomain(v);
  return errors.empty() ? std::string()
                        : fmt::format("\"{}\" is neither volcano nor a valid scheduler name: {}", v, errors.front());
}

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

const kube::GroupVersionResource kCrds{"apiextensions.k8s.io", "v1", "customresourcedefinitions"};

// One CRD per (group, plural) of the enabled modules. A version-specific file
// "<group>_<plural>_<version>.yaml" is preferred when one module serves the CRD; otherwise
// "<group>_<plural>.yaml" is trimmed to the enabled modules' versions. Serving two versions
// needs the conversion webhook: `convert_url` ("https://127.0.0.1:PORT/convert") and `ca_cert`.
Status install_crds(kube::Client& client, const std::string& dir,
                    const std::vector<const framework::Registration*>& enabled, const std::string& convert_url,
                    const std::string& ca_cert) {
  std::vector<std::pair<std::string, std::vector<const framework::Registration*>>> crds;  // by "<plural>.<group>"
  for (const auto* reg : enabled) {
    const std::string name = reg->descriptor.plural + "." + reg->descriptor.group;
    auto it = std::find_if(crds.begin(), crds.end(), [&](const auto& c) { return c.first == name; });
    if (it == crds.end()) crds.push_back({name, {reg}});
    else it->second.push_back(reg);
  }
  for (const auto& [crd_name, regs] : crds) {
    const auto& d = regs.front()->descriptor;
    auto path = fs::path(dir) / fmt::format("{}_{}.yaml", d.group, d.plural);
    if (auto versioned = fs::path(dir) / fmt::format("{}_{}_{}.yaml", d.group, d.plural, d.version);
        regs.size() == 1 && fs::exists(versioned))
      path = versioned;
    std::ifstream in(path);
    if (!in) return fail(fmt::format("--crd-dir: {} for {} cannot be read", path.string(), d.name));
    std::stringstream text;
    text << in.rdbuf();
    auto docs = json::parse_yaml(text.str());
    if (!docs) return fail(fmt::format("{}: {}", path.string(), docs.error().message));
    for (auto& doc : *docs) {
      if (json::Value* versions = json::find(doc.root(), "/spec/versions"); versions != nullptr && versions->IsArray()) {
        // Only the enabled modules' versions are served; one of them is the storage version.
        json::Value kept(rapidjson::kArrayType);
        bool storage = false;
        for (auto& v : versions->GetArray()) {
          auto name = json::get_string(v, "/name");
          const bool on = name && std::any_of(regs.begin(), regs.end(), [&](const auto* r) { return r->descriptor.version == *name; });
          if (!on) continue;
          storage |= json::get_bool(v, "/storage").value_or(false);
          kept.PushBack(json::Value(v, doc.alloc()), doc.alloc());
        }
        if (kept.Empty()) return fail(fmt::format("{}: serves no version of {}", path.string(), d.name));
        if (!storage) kept[0]["storage"].SetBool(true);
        const bool several = kept.Size() > 1;
        *versions = std::move(kept);
        if (several) {
          if (convert_url.empty())
            return fail(fmt::format("{} serves {} versions and needs the conversion webhook; do not disable webhooks",
                                    crd_name, regs.size()));
          auto conversion = json::Document::parse(fmt::format(
              R"({{"strategy":"Webhook","webhook":{{"conversionReviewVersions":["v1"],"clientConfig":{{"url":"{}","caBundle":"{}"}}}}}})",
              convert_url, webhook::base64_encode(ca_cert)));
          if (auto s = json::set(doc, "/spec/conversion", json::Value(conversion->root(), doc.alloc())); !s) return s;
        } else {
          json::remove(doc, "/spec/conversion");
        }
      }
      auto created = client.create(kCrds, "", doc.root());
      if (!created && !created.error().is(kube::ApiError::Reason::AlreadyExists))
        return fail(fmt::format("installing {}: {}", path.string(), created.error().to_string()));
    }
    // The CRD serves once established; the controllers' first list must not race it.
    for (const auto* reg : regs) {
      for (int i = 0;; ++i) {
        kube::ListOptions one;
        one.limit = 1;
        if (client.list(reg->descriptor.resource(), "", one)) break;
        if (i == 100)
          return fail(fmt::format("{} is not served 10 s after installing {}", reg->descriptor.name, path.string()));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    spdlog::info("installed CRD {} from {}", crd_name, path.string());
  }
  return {};
}

std::string make_identity() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::random_device rd;
  return fmt::format("{}_{:08x}{:08x}", host, rd(), rd());
}

int run(Flags& f, const framework::Registry& registry, const std::vector<std::string>& enabled_names) {
  operator_cmd::setup_logging(f.log_format, f.zap_log_level);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  std::vector<const framework::Registration*> enabled;
  for (const auto& n : enabled_names) enabled.push_back(registry.find(n));
  spdlog::info("enabled frameworks: {}", fmt::join(enabled_names, ", "));
  spdlog::info("watching {}", f.namespaces.empty() ? std::string("all namespaces")
                                                   : fmt::format("namespace(s) {}", fmt::join(f.namespaces, ", ")));
  spdlog::debug("controller-threads={} leader-elect={} leader-election-id={} kube-api-qps={} kube-api-burst={} "
                "gang-scheduler-name=\"{}\" mpi-default-version={}",
                f.controller_threads, f.leader_elect, f.leader_election_id, f.kube_api_qps, f.kube_api_burst,
                f.gang_scheduler_name, f.mpi_default_version);

  // --- the cluster: embedded or the configured one
  std::unique_ptr<localcluster::LocalCluster> cluster;
  std::unique_ptr<localcluster::controllers::Controllers> cluster_controllers;
  kube::RestConfig rest;
  if (f.embedded) {
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
    cluster = std::make_unique<localcluster::LocalCluster>(lo);
    if (auto s = cluster->start(); !s) {
      spdlog::error("--embedded-cluster: {}", s.error().message);
      return 1;
    }
    cluster_controllers = std::make_unique<localcluster::controllers::Controllers>(
        cluster->store(), localcluster::controllers::ControllersOptions{});
    spdlog::info("embedded cluster serving at {}", cluster->url());
    auto cfg = kube::load_kubeconfig(kube::KubeconfigOptions{{cluster->kubeconfig_path()}, ""});
    if (!cfg) {
      spdlog::error("{}", cfg.error().message);
      return 1;
    }
    rest = *cfg;
  } else {
    auto cfg = kube::load_default_config(f.kubeconfig, "");
    if (!cfg) {
      spdlog::error("--kubeconfig: {}", cfg.error().message);
      return 1;
    }
    rest = *cfg;
  }
  rest.qps = f.kube_api_qps;
  rest.burst = f.kube_api_burst;
  auto rest_client = kube::RestClient::create(rest);
  if (!rest_client) {
    spdlog::error("API client for {}: {}", rest.server_url(), rest_client.error().message);
    return 1;
  }
  CountingClient client(**rest_client);
  // Leader election gets its own client without retries (controller-runtime also gives it a
  // separate one): a renewal that waits out the shared client's backoff against an unreachable
  // server would hold up stop(), and a failed attempt is simply tried again next retry period.
  kube::RestClientOptions election_options;
  election_options.retry.max_retries = 0;
  election_options.transport.connect_timeout = std::chrono::seconds(2);
  kube::RestConfig election_rest = rest;
  election_rest.timeout = std::chrono::seconds(5);
  auto election_rest_client = kube::RestClient::create(election_rest, election_options);
  if (!election_rest_client) {
    spdlog::error("API client for {}: {}", rest.server_url(), election_rest_client.error().message);
    return 1;
  }
  CountingClient election_client(**election_rest_client);
  kube::RealClock clock;

  // --- webhooks: every replica serves them
  framework::EnablementOptions enablement;
  enablement.default_version["mpijob"] = f.mpi_default_version;
  std::unique_ptr<operator_cmd::OperatorWebhooks> webhooks;
  std::string convert_url;
  if (f.enable_webhooks) {
    operator_cmd::WebhookOptions wo;
    wo.port = static_cast<uint16_t>(f.webhook_server_port);
    auto validity = parse_duration(f.webhook_cert_validity);
    wo.certs.cert.service_name = f.webhook_service_name;
    wo.certs.cert.service_namespace = f.webhook_namespace;
    wo.certs.cert.validity = *validity;
    wo.certs.secret_namespace = f.webhook_namespace;
    wo.certs.secret_name = f.webhook_secret_name;
    wo.certs.lookahead = webhook::default_lookahead(*validity);
    wo.certs.validating_configurations = {std::string(webhook::kValidatingConfigurationName)};
    wo.certs.mutating_configurations = {std::string(webhook::kMutatingConfigurationName)};
    wo.handler.persist_defaults = f.webhook_persist_defaults;
    if (cluster) {
      // The local API server calls the operator on this host: a url, so no Service is needed.
      wo.host = "127.0.0.1";
      if (!f.webhook_port_given) wo.port = 0;
      wo.certs.cert.ip_addresses = {"127.0.0.1"};
      auto ns = json::Document::parse(fmt::format(R"({{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{}"}}}})",
                                                  f.webhook_namespace));
      auto created = client.create({"", "v1", "namespaces"}, "", ns->root());
      if (!created && !created.error().is(kube::ApiError::Reason::AlreadyExists)) {
        spdlog::error("namespace {} for the webhook Secret: {}", f.webhook_namespace, created.error().to_string());
        return 1;
      }
    }
    std::vector<std::unique_ptr<framework::FrameworkPlugin>> plugins;
    for (const auto* reg : enabled) {
      framework::PluginConfig pc;
      for (const auto& o : reg->options) pc.options[o.name] = f.framework_options[o.name];
      auto plugin = registry.instantiate(reg->descriptor.name, std::move(pc));
      if (!plugin) {
        spdlog::error("{}: {}", reg->descriptor.name, plugin.error().message);
        return 1;
      }
      plugins.push_back(std::move(*plugin));
    }
    {
      // Which CRDs get the caBundle follows from the handler's conversions.
      std::vector<const framework::FrameworkPlugin*> raw;
      for (const auto& p : plugins) raw.push_back(p.get());
      wo.certs.crds = webhook::Handler(raw, registry).conversion_crds();
    }
    auto started = operator_cmd::OperatorWebhooks::start(client, std::move(plugins), registry, wo);
    if (!started) {
      spdlog::error("{}", started.error().message);
      return 1;
    }
    webhooks = std::move(*started);
    spdlog::info("--webhook-server-port serving HTTPS on port {}", webhooks->port());
    if (cluster) {
      if (!webhooks->wait_ready(std::chrono::seconds(30))) {
        spdlog::error("webhook certificates are not ready after 30 s");
        return 1;
      }
      const std::string url = fmt::format("https://127.0.0.1:{}", webhooks->port());
      convert_url = url + std::string(webhook::kConvertPath);
      if (auto s = operator_cmd::register_webhook_configurations(client, webhooks->handler(), url, webhooks->ca_cert());
          !s) {
        // A cluster without admission webhooks still runs jobs: --mpi-default-version routes them.
        spdlog::warn("webhook configurations not registered: {}", s.error().message);
      } else {
        spdlog::info("registered webhook configurations {} and {} at {}", webhook::kValidatingConfigurationName,
                     webhook::kMutatingConfigurationName, url);
      }
    }
  }

  if (cluster) {
    auto dir = find_crd_dir(f.crd_dir);
    if (dir.empty()) {
      spdlog::error("--crd-dir: no manifests/crds directory found next to {}; pass --crd-dir", executable_dir());
      return 1;
    }
    if (auto s = install_crds(client, dir, enabled, convert_url, webhooks ? webhooks->ca_cert() : std::string()); !s) {
      spdlog::error("{}", s.error().message);
      return 1;
    }
    std::cout << "kubeconfig " << cluster->kubeconfig_path() << std::endl;
  }

  // --- controllers (started when leading, or at once without election)
  std::shared_ptr<const gang::Backend> gang = gang::make_backend(f.gang_scheduler_name);
  const std::string identity = make_identity();
  std::vector<std::unique_ptr<kube::EventRecorder>> recorders;
  std::vector<std::unique_ptr<RecorderSink>> sinks;
  std::vector<std::unique_ptr<controller::JobController>> controllers;
  const char* domain = std::getenv("CUSTOM_CLUSTER_DOMAIN");
  for (const auto* reg : enabled) {
    framework::PluginConfig pc;
    for (const auto& o : reg->options) pc.options[o.name] = f.framework_options[o.name];
    pc.gang_scheduler_name = f.gang_scheduler_name;
    pc.cluster_domain = domain ? domain : "";
    auto plugin = registry.instantiate(reg->descriptor.name, std::move(pc));
    if (!plugin) {
      spdlog::error("{}: {}", reg->descriptor.name, plugin.error().message);
      return 1;
    }
    recorders.push_back(std::make_unique<kube::EventRecorder>(
        client, clock, kube::EventRecorderOptions{.component = reg->descriptor.controller_name, .host = identity}));
    sinks.push_back(std::make_unique<RecorderSink>(*recorders.back()));
    controller::JobControllerOptions jo;
    jo.namespaces = f.namespaces;
    jo.workers = f.controller_threads;
    jo.gang = gang;
    jo.owns_unset_managed_by = registry.owns_unset_managed_by(reg->descriptor.name, enabled_names, enablement);
    controllers.push_back(std::make_unique<controller::JobController>(client, clock, *sinks.back(),
                                                                      std::move(*plugin), jo));
  }

  std::atomic<bool> leading{!f.leader_elect};
  std::atomic<bool> lost_lease{false};
  std::atomic<bool> want_start{!f.leader_elect};
  std::atomic<bool> workers_started{false};
  OperatorMetrics metrics({&client, &election_client}, f.leader_election_id, [&] { return leading.load(); });
  // Caches fill on every replica; only the leader's workers reconcile.
  for (auto& r : recorders) r->start();
  for (auto& c : controllers) {
    c->start_caches();
    metrics.add_controller(*c);
  }

  // --- endpoints
  auto handler = [&](std::string_view path) -> HttpReply {
    if (path == "/healthz" || path == "/livez") return {200, "text/plain; charset=utf-8", "ok\n"};
    if (path == "/readyz") {
      if (webhooks && !webhooks->certificates_ready())
        return {503, "text/plain; charset=utf-8", "certificates are not ready\n"};
      // Every replica runs the informers (controller-runtime's caches are not leader-gated), so a
      // follower is ready exactly when a leader would be: once every cache has synced.
      for (const auto& c : controllers) {
        if (!c->wait_for_sync(std::chrono::milliseconds(0)))
          return {503, "text/plain; charset=utf-8", fmt::format("{} caches not synced\n", c->descriptor().name)};
      }
      return {200, "text/plain; charset=utf-8", leading.load() ? "ok\n" : "ok (standby)\n"};
    }
    if (path == "/metrics") return {200, metrics::kContentType, metrics.expose()};
    return {404, "text/plain; charset=utf-8", "not found\n"};
  };
  std::vector<std::unique_ptr<HttpServer>> servers;
  auto serve = [&](const char* flag, const std::string& address) -> bool {
    if (address == "0") return true;  // controller-runtime: "0" disables the endpoint
    auto hp = parse_bind_address(flag, address);
    if (!hp) {
      spdlog::error("{}", hp.error().message);
      return false;
    }
    // Metrics and probes on one address share one server.
    for (const auto& s : servers) {
      if (s->port() == hp->second && hp->second != 0) return true;
    }
    auto server = HttpServer::start(hp->first, hp->second, handler);
    if (!server) {
      spdlog::error("{}: {}", flag, server.error().message);
      return false;
    }
    spdlog::info("{} serving on port {}", flag, (*server)->port());
    servers.push_back(std::move(*server));
    return true;
  };
  if (!serve("--health-probe-bind-address", f.health_probe_bind_address) ||
      !serve("--metrics-bind-address", f.metrics_bind_address))
    return 1;

  std::unique_ptr<kube::LeaderElector> elector;
  if (f.leader_elect) {
    kube::LeaderElectionConfig lc;
    lc.lease_namespace = f.leader_election_namespace.empty() ? rest.namespace_ : f.leader_election_namespace;
    lc.lease_name = f.leader_election_id;
    lc.identity = identity;
    lc.lease_duration = *parse_duration(f.leader_elect_lease_duration);
    lc.renew_deadline = *parse_duration(f.leader_elect_renew_deadline);
    lc.retry_period = *parse_duration(f.leader_elect_retry_period);
    lc.on_started_leading = [&] {
      leading = true;
      want_start = true;
    };
    lc.on_stopped_leading = [&] {
      leading = false;
      lost_lease = true;
    };
    lc.on_new_leader = [](const std::string& who) { spdlog::info("leader is now {}", who); };
    auto e = kube::LeaderElector::create(election_client, clock, lc);
    if (!e) {
      spdlog::error("--leader-elect: {}", e.error().message);
      return 1;
    }
    elector = std::move(*e);
    spdlog::info("campaigning for lease {}/{} as {}", lc.lease_namespace, lc.lease_name, identity);
    elector->start();
  }

  // --- main loop: start on leadership, stop on a signal or a lost lease
  int exit_code = 0;
  for (;;) {
    if (want_start.load() && !workers_started.load()) {
      for (auto& c : controllers) c->start();
      workers_started = true;
      spdlog::info("started {} controller(s) with {} worker(s) each", controllers.size(), f.controller_threads);
    }
    if (lost_lease.load()) {
      spdlog::error("leader election lost; exiting");
      exit_code = 1;
      break;
    }
    timespec wait{0, 200 * 1000 * 1000};
    int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig > 0) {
      spdlog::info("signal {} received, stopping", sig);
      break;
    }
  }

  // Graceful stop has 30 s; past that, exit anyway so a stuck call cannot hold the pod.
  std::thread watchdog([] {
    std::this_thread::sleep_for(std::chrono::seconds(30));
    std::fprintf(stderr, "training-operator: graceful stop exceeded 30 s, exiting\n");
    std::_Exit(1);
  });
  watchdog.detach();
  auto t0 = std::chrono::steady_clock::now();
  for (auto& c : controllers) c->stop();
  for (auto& r : recorders) r->stop();
  if (elector) elector->stop();  // releases the lease so a successor takes over at once
  servers.clear();
  webhooks.reset();
  cluster_controllers.reset();
  if (cluster) cluster->stop();
  spdlog::info("stopped in {} ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::steady_clock::now() - t0).count());
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    framework::Registry registry;
    if (auto s = operator_cmd::register_frameworks(registry); !s) {
      std::fprintf(stderr, "training-operator: %s\n", s.error().message.c_str());
      return 1;
    }
    Flags f;
    if (const char* ns = std::getenv("KUBEFLOW_NAMESPACE"); ns && *ns) f.namespaces = {ns};

    CLI::App app{"Unitrain training operator: runs Kubeflow training jobs (PyTorchJob, MPIJob, ...)"};
    app.get_formatter()->column_width(44);
    std::string names;
    for (const auto& n : registry.accepted_names()) names += (names.empty() ? "" : ", ") + n;
    app.add_option("--enable-scheme", f.enable_scheme,
                   "Framework(s) to enable; repeatable, comma lists allowed, '*' for all, '-name' removes. "
                   "Default: all, MPIJob only in --mpi-default-version. Accepted: " + names);
    app.add_option("--gang-scheduler-name", f.gang_scheduler_name,
                   "Gang scheduler: 'volcano' or a scheduler-plugins scheduler name; empty disables gang scheduling")
        ->check(CLI::Validator(check_gang_scheduler, "NAME", "gang scheduler"));
    app.add_option("--namespace", f.namespaces,
                   "Namespace(s) to watch; repeatable. Default: $KUBEFLOW_NAMESPACE, else all namespaces")
        ->check(kube_name(api::validate_dns1123_label, "namespace"));
    app.add_option("--controller-threads", f.controller_threads, "Reconcile workers per framework controller")
        ->capture_default_str()->check(CLI::Range(1, 1000));
    app.add_flag("--leader-elect", f.leader_elect,
               "Use a coordination.k8s.io Lease so only one replica reconciles (--leader-elect=false to disable)");
    app.add_option("--leader-election-id", f.leader_election_id, "Name of the leader-election Lease")
        ->capture_default_str()->check(kube_name(api::validate_dns1123_subdomain, "Lease name"));
    app.add_option("--leader-election-namespace", f.leader_election_namespace,
                   "Namespace of the Lease (default: the namespace of the kubeconfig context / pod)")
        ->check(kube_name(api::validate_dns1123_label, "namespace"));
    const auto duration_check = CLI::Validator(
        [](std::string& v) {
          return parse_duration(v) ? std::string() : "must be a positive number of h, m or s, not \"" + v + "\"";
        },
        "DURATION", "duration");
    app.add_option("--leader-elect-lease-duration", f.leader_elect_lease_duration,
                   "How long followers wait after the last renewal before taking the Lease over")
        ->capture_default_str()->check(duration_check);
    app.add_option("--leader-elect-renew-deadline", f.leader_elect_renew_deadline,
                   "How long the leader keeps trying to renew before it stops leading; less than the lease duration")
        ->capture_default_str()->check(duration_check);
    app.add_option("--leader-elect-retry-period", f.leader_elect_retry_period,
                   "Interval between acquire and renew attempts (with up to 1.2x jitter for candidates); "
                   "1.2x it must be less than the renew deadline")
        ->capture_default_str()->check(duration_check);
    app.add_option("--metrics-bind-address", f.metrics_bind_address,
                   "host:port of the Prometheus /metrics endpoint; '0' disables it")->capture_default_str();
    app.add_option("--health-probe-bind-address", f.health_probe_bind_address,
                   "host:port of /healthz and /readyz; '0' disables them")->capture_default_str();
    app.add_option("--kubeconfig", f.kubeconfig,
                   "kubeconfig file (default: $KUBECONFIG, in-cluster config, then ~/.kube/config)")
        ->check(CLI::ExistingFile);
    app.add_option("--kube-api-qps", f.kube_api_qps, "Client-side QPS limit towards the API server")
        ->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("--kube-api-burst", f.kube_api_burst, "Client-side burst towards the API server")
        ->capture_default_str()->check(CLI::Range(1, 100000));
    app.add_option("--zap-log-level", f.zap_log_level,
                   "Log level: debug, info, warn, error, dpanic, panic, fatal, or an integer verbosity > 0")
        ->capture_default_str()->check(CLI::Validator(operator_cmd::check_zap_level, "LEVEL", "zap level"));
    app.add_option("--log-format", f.log_format, "Log format: json or text")
        ->capture_default_str()->check(CLI::IsMember({"json", "text"}));
    app.add_option("--mpi-default-version", f.mpi_default_version,
                   "MPIJob version the bare kind 'MPIJob' means in --enable-scheme, and, with both MPIJob "
                   "versions enabled, the one whose controller takes jobs without spec.runPolicy.managedBy: "
                   "v2beta1 or v1")
        ->capture_default_str()->check(CLI::IsMember({"v2beta1", "v1"}));
    auto* embedded = app.add_option("--embedded-cluster", f.embedded_cluster,
                                    "Start a local cluster in-process (optionally on ADDR, host:port), install "
                                    "the enabled frameworks' CRDs and print 'kubeconfig <path>' on stdout")
                         ->expected(0, 1);
    app.add_option("--crd-dir", f.crd_dir, "Directory with the CRD YAMLs for --embedded-cluster "
                                           "(default: <bin>/../../manifests/crds)");
    app.add_option("--kubeconfig-out", f.kubeconfig_out,
                   "Where --embedded-cluster writes its kubeconfig (default: $TMPDIR/unitrain-operator-<pid>/kubeconfig)");
    app.add_flag("!--disable-webhooks", f.enable_webhooks,
                 "Do not serve admission and conversion webhooks (no certificates, no Secret)");
    auto* webhook_port = app.add_option("--webhook-server-port", f.webhook_server_port,
                                        "HTTPS port of the webhook server (with --embedded-cluster: on 127.0.0.1, "
                                        "a free port unless given)")
                             ->capture_default_str()->check(CLI::Range(0, 65535));
    if (const char* ns = std::getenv("MY_POD_NAMESPACE"); ns && *ns) f.webhook_namespace = ns;
    app.add_option("--webhook-service-name", f.webhook_service_name,
                   "Service in front of the webhook server; the certificate names <name>.<namespace>.svc")
        ->capture_default_str();
    app.add_option("--webhook-namespace", f.webhook_namespace,
                   "Namespace of that Service and of the certificate Secret (default: $MY_POD_NAMESPACE, else kubeflow)")
        ->capture_default_str();
    app.add_option("--webhook-secret-name", f.webhook_secret_name, "Secret holding the webhook CA and certificate")
        ->capture_default_str();
    app.add_option("--webhook-cert-validity", f.webhook_cert_validity,
                   "Validity of generated webhook certificates (e.g. 87600h, 30m, 90s); they are replaced when a "
                   "quarter of it (at most 90 days) remains")
        ->capture_default_str()
        ->check(CLI::Validator([](std::string& v) { return parse_duration(v) ? std::string() : "must be a positive number of h, m or s, not \"" + v + "\""; }, "DURATION", "duration"));
    app.add_flag("--webhook-persist-defaults", f.webhook_persist_defaults,
                 "Have the defaulting webhooks write each framework's defaults into new jobs (the reference "
                 "operators apply them in memory only)");
    for (const auto& reg : registry.all()) {
      for (const auto& o : reg.options) {
        f.framework_options[o.name] = o.default_value;
        app.add_option("--" + o.name, f.framework_options[o.name],
                       fmt::format("[{}] {}", reg.descriptor.kind, o.help))
            ->capture_default_str();
      }
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      std::fprintf(stderr, "training-operator: %s\nRun with --help for the list of flags.\n", e.what());
      return kUsageError;
    }
    {
      // The relations client-go's leaderelection checks (and kube::LeaderElector::create with jitter 1.2).
      const auto lease = *parse_duration(f.leader_elect_lease_duration);
      const auto renew = *parse_duration(f.leader_elect_renew_deadline);
      const auto retry = *parse_duration(f.leader_elect_retry_period);
      if (lease <= renew) {
        std::fprintf(stderr, "training-operator: --leader-elect-lease-duration (%s) must be greater than "
                             "--leader-elect-renew-deadline (%s)\n",
                     f.leader_elect_lease_duration.c_str(), f.leader_elect_renew_deadline.c_str());
        return kUsageError;
      }
      if (static_cast<double>(renew.count()) <= 1.2 * static_cast<double>(retry.count())) {
        std::fprintf(stderr, "training-operator: --leader-elect-renew-deadline (%s) must be greater than 1.2 times "
                             "--leader-elect-retry-period (%s)\n",
                     f.leader_elect_renew_deadline.c_str(), f.leader_elect_retry_period.c_str());
        return kUsageError;
      }
    }
    f.embedded = embedded->count() > 0;
    f.webhook_port_given = webhook_port->count() > 0;

    framework::EnablementOptions eo;
    eo.default_version["mpijob"] = f.mpi_default_version;
    std::vector<std::string> schemes = f.enable_scheme;
    if (schemes.empty()) {
      // Every framework, but a kind served by several modules only in its default version: each
      // version alone has a single-version CRD; both at once are asked for by name (or '*').
      schemes.push_back("*");
      for (const auto& reg : registry.all()) {
        std::string kind = reg.descriptor.kind;
        std::transform(kind.begin(), kind.end(), kind.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        auto it = eo.default_version.find(kind);
        if (it != eo.default_version.end() && it->second != reg.descriptor.version) schemes.push_back("-" + reg.descriptor.name);
      }
    }
    auto enabled = registry.resolve(schemes, eo);
    if (!enabled) {
      std::fprintf(stderr, "training-operator: --enable-scheme: %s\n", enabled.error().message.c_str());
      return kUsageError;
    }
    if (enabled->empty()) {
      std::fprintf(stderr, "training-operator: --enable-scheme: no framework left enabled\n");
      return kUsageError;
    }
    const std::pair<const char*, const std::string*> addresses[] = {
        {"--metrics-bind-address", &f.metrics_bind_address},
        {"--health-probe-bind-address", &f.health_probe_bind_address},
        {"--embedded-cluster", &f.embedded_cluster}};
    for (const auto& [flag, value] : addresses) {
      // "0" disables an endpoint; an empty --embedded-cluster picks a free local port.
      if (*value == "0" || value->empty()) continue;
      if (auto hp = operator_cmd::parse_bind_address(flag, *value); !hp) {
        std::fprintf(stderr, "training-operator: %s\n", hp.error().message.c_str());
        return kUsageError;
      }
    }
    return run(f, registry, *enabled);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "training-operator: fatal: %s\n", e.what());
    return 1;
  }
}
