// build/bin/localcluster: the embedded Kubernetes-API-compatible cluster as a standalone process.
// Prints exactly one line, "ready <url>", on stdout once it serves; logs go to stderr.
#include <csignal>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "core/framework/ascii.h"
#include "localcluster/controllers/controller_base.h"
#include "localcluster/controllers/controllers.h"
#include "localcluster/controllers/podgroup_crds.h"
#include "localcluster/local_cluster.h"

namespace {

// Blocks SIGTERM/SIGINT in every thread (workers inherit the mask) and waits for one here, so
// shutdown runs on the main thread with no async-signal-safety concerns.
int wait_for_signal(sigset_t& set) {
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    CLI::App app{"Unitrain embedded Kubernetes-API-compatible cluster"};
    std::string listen = "127.0.0.1:0";
    std::string kubeconfig_out;
    bool tls = false;
    bool insecure_allow_remote = false;
    std::string token;
    std::string state_dir;
    std::string log_level = "info";
    int threads = 2;
    std::vector<std::string> service_endpoints;
    std::string faults;
    int64_t fault_seed = -1;
    std::string controllers = "all";
    std::string kubelet = "sim";
    unitrain::localcluster::controllers::KubeletOptions node;
    std::string restart_backoff = "10s";
    std::string gang_scheduler;
    app.add_option("--listen", listen, "host:port to serve on (port 0 picks a free one)")->capture_default_str();
    app.add_option("--kubeconfig-out", kubeconfig_out, "write a kubeconfig for this cluster to FILE");
    app.add_flag("--tls", tls, "serve HTTPS with a self-signed CA and require a bearer token");
    app.add_option("--token", token, "bearer token clients must send (generated with --tls when omitted)");
    app.add_flag("--insecure-allow-remote", insecure_allow_remote,
                 "serve a non-loopback --listen address without --tls (anyone who reaches it reads every Secret)");
    app.add_option("--state-dir", state_dir, "persist objects here so they survive restarts");
    app.add_option("--threads", threads, "HTTP worker threads")->capture_default_str()->check(CLI::Range(1, 64));
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error")->capture_default_str();
    app.add_option("--service-endpoint", service_endpoints,
                   "NAMESPACE/NAME[:PORT]=HOST:PORT: reach webhooks of that Service at HOST:PORT (repeatable)");
    app.add_option("--faults", faults,
                   "faults to inject, as JSON or @FILE (see localcluster/README.md); change them at runtime "
                   "with PUT /unitrain/faults");
    app.add_option("--fault-seed", fault_seed, "seed of the fault generator (overrides the JSON's seed)");
    app.add_option("--controllers", controllers, "in-process controllers: all (garbage collector, Job controller, "
                   "scheduler, kubelet) or none")->capture_default_str()->check(CLI::IsMember({"all", "none"}));
    app.add_option("--kubelet", kubelet, "sim: the simulated kubelet runs pods; manual: pod phases only change "
                   "through the API")->capture_default_str()->check(CLI::IsMember({"sim", "manual"}));
    app.add_option("--nodes", node.nodes, "simulated nodes")->capture_default_str()->check(CLI::Range(0, 10000));
    app.add_option("--node-cpu", node.cpu, "cpu capacity of each node")->capture_default_str();
    app.add_option("--node-memory", node.memory, "memory capacity of each node")->capture_default_str();
    app.add_option("--node-gpu", node.gpu, "nvidia.com/gpu capacity of each node")->capture_default_str();
    app.add_option("--node-pods", node.pods, "pod capacity of each node")->capture_default_str();
    app.add_option("--restart-backoff", restart_backoff,
                   "first container restart back-off (Go duration; doubles per restart up to 5m; 0 restarts at once)")
        ->capture_default_str();
    app.add_option("--gang-scheduler", gang_scheduler,
                   "install this gang scheduler's PodGroup CRD and serve its scheduler name: 'volcano' or a "
                   "scheduler-plugins scheduler name (as the operator's --gang-scheduler-name)");
    CLI11_PARSE(app, argc, argv);
    auto backoff = unitrain::localcluster::controllers::parse_go_duration(restart_backoff);
    if (!backoff || backoff->count() < 0) {
      std::fprintf(stderr, "localcluster: --restart-backoff %s: not a duration such as 10s or 500ms\n",
                   restart_backoff.c_str());
      return 2;
    }
    node.restart_backoff = std::chrono::duration_cast<std::chrono::milliseconds>(*backoff);

    auto logger = spdlog::stderr_color_mt("localcluster");
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(log_level));

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    // A client that goes away mid-write must not kill the server.
    std::signal(SIGPIPE, SIG_IGN);

    unitrain::localcluster::LocalClusterOptions options;
    options.listen = listen;
    options.tls = tls;
    options.threads = threads;
    options.insecure_allow_remote = insecure_allow_remote;
    if (!token.empty()) options.token = token;
    if (!state_dir.empty()) options.state_dir = state_dir;
    if (!kubeconfig_out.empty()) options.kubeconfig_out = kubeconfig_out;
    // A refused exposure is a usage error (exit 2), reported before anything is opened.
    if (auto exposure = unitrain::localcluster::check_exposure(options); exposure.refusal) {
      spdlog::error("{}", *exposure.refusal);
      return 2;
    }
    for (const auto& e : service_endpoints) {
      if (auto st = unitrain::localcluster::add_service_endpoint(options.webhooks, e); !st) {
        std::fprintf(stderr, "localcluster: %s\n", st.error().message.c_str());
        return 2;
      }
    }
    if (!faults.empty()) {
      std::string text = faults;
      if (faults.front() == '@') {
        std::ifstream in(faults.substr(1));
        if (!in) {
          spdlog::error("--faults: cannot read {}", faults.substr(1));
          return 2;
        }
        std::stringstream ss;
        ss << in.rdbuf();
        text = ss.str();
      }
      auto c = unitrain::localcluster::FaultConfig::parse(text);
      if (!c) {
        spdlog::error("--faults: {}", c.error().message);
        return 2;
      }
      options.faults = std::move(*c);
    }
    if (fault_seed >= 0) options.faults.seed = static_cast<uint64_t>(fault_seed);
    unitrain::localcluster::LocalCluster* self = nullptr;
    if (controllers == "all") {
      node.manual = kubelet == "manual";
      const bool volcano = unitrain::framework::ascii::iequals(gang_scheduler, "volcano");
      options.attach = [&self, node, gang_scheduler, volcano](unitrain::localcluster::Store& store) -> std::shared_ptr<void> {
        unitrain::localcluster::controllers::ControllersOptions co;
        if (!gang_scheduler.empty()) {
          if (auto s = unitrain::localcluster::controllers::install_podgroup_crds(store, {volcano, !volcano}); !s)
            spdlog::error("--gang-scheduler: {}", s.error().message);
          if (!volcano) co.scheduler_options.scheduler_plugins_name = gang_scheduler;
        }
        co.kubelet_options = node;
        co.kubelet_options.log = [&self](const unitrain::localcluster::ContainerLogLine& line) {
          if (self != nullptr) self->append_pod_log(line);
        };
        return std::make_shared<unitrain::localcluster::controllers::Controllers>(store, std::move(co));
      };
    }
    unitrain::localcluster::LocalCluster cluster(options);
    self = &cluster;
    if (auto s = cluster.start(); !s) {
      spdlog::error("{}", s.error().message);
      return 1;
    }
    std::cout << "ready " << cluster.url() << std::endl;
    // SIGHUP restarts the whole cluster in place (state kept with --state-dir), for tests of
    // clients that must survive an API server restart.
    int sig = 0;
    while ((sig = wait_for_signal(set)) == SIGHUP) {
      spdlog::info("localcluster: SIGHUP received, restarting");
      if (auto s = cluster.restart(); !s) {
        spdlog::error("restart: {}", s.error().message);
        return 1;
      }
      spdlog::info("localcluster: restarted at {}", cluster.url());
    }
    spdlog::info("localcluster: signal {} received, stopping", sig);
    cluster.stop();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "localcluster: fatal: %s\n", e.what());
    return 1;
  }
}
