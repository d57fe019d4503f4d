#include "localcluster/local_cluster.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "localcluster/kubeconfig_out.h"
#include "localcluster/memory_store.h"
#include "localcluster/persistence.h"
#include "localcluster/server.h"
#include "localcluster/tls.h"

namespace unitrain::localcluster {
namespace {

// With a state directory the generated token survives restarts, like the TLS material, so a
// kubeconfig written by an earlier run stays valid.
Result<std::string> load_or_make_token(const std::optional<std::string>& state_dir) {
  if (!state_dir) return random_token();
  namespace fs = std::filesystem;
  fs::path p = fs::path(*state_dir) / "token";
  std::error_code ec;
  if (fs::exists(p, ec)) {
    std::ifstream in(p);
    std::string t;
    std::getline(in, t);
    if (!t.empty()) return t;
  }
  if (auto st = make_private_dir(*state_dir); !st) return fail(st.error());
  std::string t = random_token();
  if (auto st = write_private_file(p.string(), t + "\n"); !st) return fail(st.error());
  return t;
}

bool is_ipv4_loopback(std::string_view h) {
  if (!h.starts_with("127.")) return false;
  int parts = 0;
  while (!h.empty()) {
    size_t dot = h.find('.');
    std::string_view part = h.substr(0, dot);
    if (part.empty() || part.size() > 3 || part.find_first_not_of("0123456789") != std::string_view::npos ||
        std::stoi(std::string(part)) > 255) {
      return false;
    }
    ++parts;
    h = dot == std::string_view::npos ? std::string_view{} : h.substr(dot + 1);
  }
  return parts == 4;
}

}  // namespace

bool is_loopback_host(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1") return true;
  if (host.starts_with("::ffff:")) host.remove_prefix(7);
  return is_ipv4_loopback(host);
}

Exposure check_exposure(const LocalClusterOptions& o) {
  Exposure e;
  const std::string host = o.listen.substr(0, o.listen.rfind(':'));
  const bool remote = !is_loopback_host(host);
  if (remote && !o.tls) {
    std::string where = host.empty() ? "every interface" : host;
    if (!o.insecure_allow_remote) {
      e.refusal = "--listen " + o.listen + ": " + where +
                  " is reachable from other machines, and without --tls every Secret would be served " +
                  (o.token ? "to anyone who sees the token in clear" : "to anyone") +
                  "; add --tls (a bearer token is then required), listen on 127.0.0.1, or accept the "
                  "exposure with --insecure-allow-remote";
      return e;
    }
    e.warnings.push_back("--insecure-allow-remote: serving plain HTTP on " + where + (o.token ? "" : " without a token") +
                         "; anyone who reaches it can read every Secret");
  }
  if (o.token && !o.tls) {
    e.warnings.push_back("--token without --tls: the bearer token travels in clear over HTTP");
  }
  return e;
}

LocalCluster::LocalCluster(LocalClusterOptions options)
    : options_(std::move(options)), faults_(std::make_shared<FaultInjector>(options_.faults)) {}

LocalCluster::~LocalCluster() { stop(); }

Status LocalCluster::open_store() {
  StoreOptions so;
  so.state_dir = options_.state_dir;
  auto store = make_memory_store(so);
  if (!store) return fail(std::move(store.error()).prefix("local cluster store"));
  store_ = std::move(*store);
  return {};
}

Status LocalCluster::start_server(const std::string& listen) {
  ServerOptions opts;
  opts.listen = listen;
  opts.threads = options_.threads;
  opts.webhooks = options_.webhooks;
  opts.faults = faults_;
  opts.request_restart = [this] {
    {
      std::lock_guard g(restart_mu_);
      restart_wanted_ = true;
    }
    restart_cv_.notify_all();
  };
  token_ = options_.token;
  if (options_.tls) {
    auto tls = load_or_make_tls(options_.state_dir);
    if (!tls) return fail(std::move(tls.error()).prefix("local cluster TLS"));
    ca_pem_ = tls->ca_cert_pem;
    opts.tls = std::move(*tls);
    if (!token_) {
      auto t = load_or_make_token(options_.state_dir);
      if (!t) return fail(t.error());
      token_ = std::move(*t);
    }
  }
  opts.token = token_;
  auto server = ApiServer::start(*store_, std::move(opts));
  if (!server) return fail(std::move(server.error()).prefix("local cluster server"));
  server_ = std::move(*server);
  return {};
}

Status LocalCluster::start() {
  std::lock_guard lifecycle(lifecycle_mu_);
  if (server_) return fail("local cluster: already started");
  auto exposure = check_exposure(options_);
  if (exposure.refusal) return fail(*exposure.refusal);
  for (const auto& w : exposure.warnings) spdlog::warn("localcluster: {}", w);
  if (auto s = open_store(); !s) return s;
  if (auto s = start_server(options_.listen); !s) return s;

  if (options_.kubeconfig_out) {
    KubeconfigSpec spec;
    spec.server = server_->url();
    if (!ca_pem_.empty()) spec.ca_pem = ca_pem_;
    spec.token = token_;
    if (auto s = write_kubeconfig(*options_.kubeconfig_out, spec); !s) {
      stop_server();
      return s;
    }
    kubeconfig_path_ = *options_.kubeconfig_out;
  }
  if (options_.attach) attached_ = options_.attach(*store_);
  restarter_stopping_ = false;
  restarter_ = std::thread([this] { run_requested_restarts(); });
  return {};
}

Status LocalCluster::restart() {
  std::lock_guard lifecycle(lifecycle_mu_);
  if (!server_) return fail("local cluster: restart before start");
  // Same host, same port: kubeconfigs and clients keep pointing at it.
  std::string listen = options_.listen.substr(0, options_.listen.rfind(':')) + ":" + std::to_string(server_->port());
  attached_.reset();
  server_->stop();
  server_.reset();
  if (options_.state_dir) {
    store_.reset();
    if (auto s = open_store(); !s) return s;
  }
  if (auto s = start_server(listen); !s) return s;
  if (options_.attach) attached_ = options_.attach(*store_);
  return {};
}

void LocalCluster::rotate_token(std::string token) {
  options_.token = token;
  token_ = token;
  if (server_) server_->set_token(std::move(token));
}

void LocalCluster::run_requested_restarts() {
  std::unique_lock lock(restart_mu_);
  for (;;) {
    restart_cv_.wait(lock, [&] { return restart_wanted_ || restarter_stopping_; });
    if (restarter_stopping_) return;
    restart_wanted_ = false;
    lock.unlock();
    if (auto s = restart(); !s) spdlog::error("localcluster: restart: {}", s.error().message);
    else spdlog::info("localcluster: restarted at {}", url());
    lock.lock();
  }
}

void LocalCluster::stop() {
  if (restarter_.joinable()) {
    {
      std::lock_guard g(restart_mu_);
      restarter_stopping_ = true;
    }
    restart_cv_.notify_all();
    restarter_.join();
  }
  std::lock_guard lifecycle(lifecycle_mu_);
  stop_server();
}

void LocalCluster::stop_server() {
  attached_.reset();
  if (server_) server_->stop();
  server_.reset();
}

std::string LocalCluster::url() const { return server_ ? server_->url() : std::string(); }
uint16_t LocalCluster::port() const { return server_ ? server_->port() : 0; }
const std::string& LocalCluster::kubeconfig_path() const { return kubeconfig_path_; }
Store& LocalCluster::store() { return *store_; }

void LocalCluster::append_pod_log(const ContainerLogLine& line) {
  if (server_) server_->append_pod_log(line);
}
void LocalCluster::clear_pod_log(std::string_view ns, std::string_view pod, std::string_view container) {
  if (server_) server_->clear_pod_log(ns, pod, container);
}
const RequestMetrics& LocalCluster::metrics() const { return server_ ? server_->metrics() : no_metrics_; }

}  // namespace unitrain::localcluster
