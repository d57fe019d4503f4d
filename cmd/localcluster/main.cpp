// build/bin/localcluster: the embedded Kubernetes-API-compatible cluster as a standalone process.
// Prints exactly one line, "ready <url>", on stdout once it serves; logs go to stderr.
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

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
    std::string token;
    std::string state_dir;
    std::string log_level = "info";
    int threads = 2;
    std::vector<std::string> service_endpoints;
    app.add_option("--listen", listen, "host:port to serve on (port 0 picks a free one)")->capture_default_str();
    app.add_option("--kubeconfig-out", kubeconfig_out, "write a kubeconfig for this cluster to FILE");
    app.add_flag("--tls", tls, "serve HTTPS with a self-signed CA and require a bearer token");
    app.add_option("--token", token, "bearer token clients must send (generated with --tls when omitted)");
    app.add_option("--state-dir", state_dir, "persist objects here so they survive restarts");
    app.add_option("--threads", threads, "HTTP worker threads")->capture_default_str()->check(CLI::Range(1, 64));
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error")->capture_default_str();
    app.add_option("--service-endpoint", service_endpoints,
                   "NAMESPACE/NAME[:PORT]=HOST:PORT: reach webhooks of that Service at HOST:PORT (repeatable)");
    CLI11_PARSE(app, argc, argv);

    auto logger = spdlog::stderr_color_mt("localcluster");
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(log_level));

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    // A client that goes away mid-write must not kill the server.
    std::signal(SIGPIPE, SIG_IGN);

    unitrain::localcluster::LocalClusterOptions options;
    options.listen = listen;
    options.tls = tls;
    options.threads = threads;
    if (!token.empty()) options.token = token;
    if (!state_dir.empty()) options.state_dir = state_dir;
    if (!kubeconfig_out.empty()) options.kubeconfig_out = kubeconfig_out;
    for (const auto& e : service_endpoints) {
      if (auto st = unitrain::localcluster::add_service_endpoint(options.webhooks, e); !st) {
        std::fprintf(stderr, "localcluster: %s\n", st.error().message.c_str());
        return 2;
      }
    }
    unitrain::localcluster::LocalCluster cluster(options);
    if (auto s = cluster.start(); !s) {
      spdlog::error("{}", s.error().message);
      return 1;
    }
    std::cout << "ready " << cluster.url() << std::endl;
    int sig = wait_for_signal(set);
    spdlog::info("localcluster: signal {} received, stopping", sig);
    cluster.stop();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "localcluster: fatal: %s\n", e.what());
    return 1;
  }
}
