// build/bin/training-operator: one controller per enabled framework, with Kubeflow-compatible
// flags (flags.h), leader election, webhooks, /healthz, /readyz and /metrics, and an optional
// embedded local cluster. This file is the wiring: which parts exist and in which order the
// manager (core/manager) starts them; it stops them in reverse.
// Logs go to stderr; with --embedded-cluster, stdout carries one line "kubeconfig <path>".
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "cmd/training-operator/clients.h"
#include "cmd/training-operator/controllers.h"
#include "cmd/training-operator/embedded_cluster.h"
#include "cmd/training-operator/endpoints.h"
#include "cmd/training-operator/flags.h"
#include "cmd/training-operator/frameworks.h"
#include "cmd/training-operator/logging.h"
#include "cmd/training-operator/manifests.h"
#include "cmd/training-operator/module_endpoints.h"
#include "cmd/training-operator/operator_metrics.h"
#include "cmd/training-operator/process.h"
#include "cmd/training-operator/webhooks.h"
#include "core/kube/clock.h"
#include "core/kube/fault_log.h"
#include "core/manager/lease_election.h"
#include "core/manager/manager.h"

using namespace unitrain;
using namespace unitrain::operator_cmd;
using manager::Leadership;

namespace {

int failed(const std::string& message) {
  spdlog::error("{}", message);
  return 1;
}

int run(const Flags& f, const framework::Registry& registry) {
  StopSignals signals;  // before any thread starts: they all inherit the blocked signals
  setup_logging(f.logging);
  log_configuration(f);
  manager::Manager mgr(manager_options(f));

  std::unique_ptr<EmbeddedCluster> cluster;
  if (f.embedded) {
    auto launched = EmbeddedCluster::launch(f);
    if (!launched) return failed(launched.error().message);
    cluster = std::move(*launched);
  }
  auto rest = cluster ? cluster->rest_config() : kube::load_default_config(f.kubeconfig, "");
  if (!rest) return failed((cluster ? "--embedded-cluster: " : "--kubeconfig: ") + rest.error().message);
  kube::RealClock clock;
  const std::string identity = replica_identity();
  // Every failed API call is said once per cause, with the cause; /readyz names it too.
  kube::FaultLog faults(clock, {rest->server_url(), kube::describe_credentials(*rest)});
  OperatorMetrics metrics({.lease_name = f.leader_elect ? std::optional<std::string>(f.leader_election_id) : std::nullopt,
                           .leading = [&mgr] { return mgr.leading(); },
                           .api_host = fmt::format("{}:{}", rest->host, rest->port)});
  auto clients = ApiClients::create({.rest = rest_options(f, *rest),
                                     .events_qps = f.events_qps,
                                     .events_burst = f.events_burst,
                                     .stopping = mgr.stopping(),
                                     .on_attempt = [&metrics, &faults](const kube::AttemptReport& a) {
                                       metrics.observe_attempt(a);
                                       if (!a.transport_error) faults.connection_ok();
                                       else if (a.transport_error->kind != kube::http::TransportError::Kind::Cancelled)
                                         faults.connection_failed(a.transport_error->message);
                                     }});
  if (!clients) return failed(clients.error().message);
  kube::ReportingClient operator_client((*clients)->main(), faults, "operator");
  kube::ReportingClient election_client((*clients)->election(), faults, "leader-election");
  auto controllers = Controllers::create(registry, f, (*clients)->main(), (*clients)->events(), clock, faults);
  if (!controllers) return failed(controllers.error().message);
  for (auto& fw : (*controllers)->all()) {
    metrics.add_controller(*fw.controller, *fw.recorder);
    if (fw.name == kMpiOperatorFramework) metrics.add_mpi_operator(*fw.controller);
  }
  Endpoints endpoints({{"--health-probe-bind-address", f.health_probe_bind_address},
                       {"--metrics-bind-address", f.metrics_bind_address}},
                      mgr, metrics);
  std::unique_ptr<OperatorWebhooks> webhooks;
  if (f.enable_webhooks) {
    auto options = webhook_options(f, cluster != nullptr);
    options.request_started = [&metrics](std::string_view path) { metrics.webhook_request_started(path); };
    options.request_finished = [&metrics](std::string_view path, int status, std::chrono::steady_clock::duration took) {
      metrics.webhook_request_finished(path, status, took);
    };
    // The webhook part says its own API failures, once per cause and in /readyz, in words about the
    // certificates (a missing Secret namespace ends start-up with one line): not through the
    // reporting client, which would say each a second time.
    webhooks = std::make_unique<OperatorWebhooks>((*clients)->main(), (*controllers)->plugins(), registry,
                                                  std::move(options));
    metrics.add_webhook_paths(webhooks->paths());
    metrics.set_webhook_certificate([&w = *webhooks] { return w.certificate_not_after(); });
  }
  // Modules' own HTTPS endpoints (the TrainJob status server), with the webhook certificate.
  ModuleEndpoints module_endpoints((*clients)->main(), (*controllers)->plugins(), webhooks.get());
  std::unique_ptr<manager::LeaseElection> election;
  if (f.leader_elect) {
    auto config = election_options(f, rest->namespace_, identity);
    spdlog::info("campaigning for lease {}/{} as {}", config.lease_namespace, config.lease_name, identity);
    auto created = manager::LeaseElection::create(mgr, election_client, clock, std::move(config));
    if (!created) return failed("--leader-elect: " + created.error().message);
    election = std::move(*created);
  }

  // Every replica, in start order (the manager stops in reverse).
  if (cluster) mgr.add("embedded cluster", *cluster);
  mgr.add("probe and metrics endpoints", endpoints);
  if (webhooks) {
    mgr.add("webhook server", *webhooks);
    mgr.add_ready_check("webhook-certificates", [&w = *webhooks] { return w.readiness(); });
  }
  if (!module_endpoints.empty()) mgr.add("module endpoints", module_endpoints);
  if (cluster) mgr.add("embedded cluster setup", cluster->setup(operator_client, registry, f, webhooks.get()));
  for (auto& fw : (*controllers)->all()) {
    auto& r = *fw.recorder;
    mgr.add(fw.controller_name + " events", manager::runnable([&r] { r.start(); }, [&r] { r.stop(); }));
  }
  // One informer per resource for every controller. Caches fill on every replica, so a follower
  // is ready, and takes over, with synced caches.
  auto& caches = (*controllers)->caches();
  mgr.add("informer caches", manager::runnable([&caches] { caches.start(); }, [&caches] { caches.stop(); }));
  for (auto& fw : (*controllers)->all()) {
    auto& c = *fw.controller;
    mgr.add_ready_check(fw.name, [&c, &faults, source = fw.controller_name]() -> Status {
      if (c.wait_for_sync({})) return Status{};
      auto causes = faults.causes(Controllers::kCachesSource);
      for (auto& cause : faults.causes(source)) causes.push_back(std::move(cause));
      return causes.empty() ? fail("caches not synced")
                            : fail(fmt::format("caches not synced: {}", fmt::join(causes, "; ")));
    });
  }
  if (election) mgr.add("leader election", *election);
  // The leader only. JobController::stop() drains the queue; the caches stop after them.
  for (auto& fw : (*controllers)->all()) {
    auto& c = *fw.controller;
    mgr.add(fw.controller_name + " workers", manager::runnable([&c] { c.start(); }, [&c] { c.stop(); }),
            Leadership::Needed);
  }
  for (auto& release : (*controllers)->finalizer_releases()) {
    auto& r = *release;
    mgr.add(r.resource().group_resource() + " finalizers", manager::runnable([&r] { r.start(); }, [&r] { r.stop(); }),
            Leadership::Needed);
  }

  return exit_status(mgr.run(signals.token()));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    framework::Registry registry;
    if (auto s = register_frameworks(registry); !s) {
      std::fprintf(stderr, "training-operator: %s\n", s.error().message.c_str());
      return 1;
    }
    // A module that cannot be loaded or collides with another is a usage error, as a bad flag is.
    auto modules = module_paths(argc, argv);
    if (!modules) {
      std::fprintf(stderr, "training-operator: %s\n", modules.error().message.c_str());
      return 2;
    }
    if (auto s = load_modules(*modules, registry); !s) {
      std::fprintf(stderr, "training-operator: %s\n", s.error().message.c_str());
      return 2;
    }
    if (argc > 1 && std::string_view(argv[1]) == "manifests") return manifests_command(argc, argv, registry);
    auto flags = parse_flags(argc, argv, registry);
    if (!flags) return flags.error();
    return run(*flags, registry);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "training-operator: fatal: %s\n", e.what());
    return 1;
  }
}
