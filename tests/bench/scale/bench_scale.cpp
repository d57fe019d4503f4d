// The operator at scale: N PyTorchJobs (1 Master + 3 Workers) submitted at once to a standalone
// local cluster, with every framework enabled in the operator. The cluster and the operator run
// as separate processes so their CPU time and memory are measured apart (from /proc); writes come
// from the cluster's apiserver_request_total; the times come from this program's own watches.
// Each run uses a fresh cluster and operator, and ends with an operator restart over the
// finished (steady) cluster: its writes must be 0, and its RSS is the cache without the garbage
// of the run. Prints one line per run, then one table (median and spread of the repeats).
// Asserts nothing: figures for docs/performance.md.
//
//   bench_scale --source . [--operator build/bin/training-operator] [--localcluster build/bin/localcluster]
//               [--jobs 250,1000,2500] [--qps 20,5000] [--repeat 3] [--pod-seconds 5] [--singles]
//               [--foreign-pods N] [--foreign-services N]
// --foreign-pods / --foreign-services create that many pods / Services of nobody's (no label, no
// owner: what other workloads put in a cluster) before the operator starts; "RSS start" is then
// what caching (or dropping) them costs, the KiB/pod slopes stay those of the jobs' pods.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/kube/config.h"
#include "core/kube/informer.h"
#include "core/kube/rest_client.h"

extern char** environ;

using namespace unitrain;
using Steady = std::chrono::steady_clock;

namespace {

const kube::GroupVersionResource kPods{"", "v1", "pods"};
const kube::GroupVersionResource kServices{"", "v1", "services"};
const kube::GroupVersionResource kCrds{"apiextensions.k8s.io", "v1", "customresourcedefinitions"};
const kube::GroupVersionResource kPyTorchJobs{"kubeflow.org", "v1", "pytorchjobs"};
const kube::GroupVersionResource kMpiJobsV2{"kubeflow.org", "v2beta1", "mpijobs"};

// The resource a CRD serves, at its storage version (what the wait for it being served lists).
kube::GroupVersionResource storage_resource(const json::Value& crd) {
  kube::GroupVersionResource r{std::string(json::get_string(crd, "/spec/group").value_or("")), "",
                               std::string(json::get_string(crd, "/spec/names/plural").value_or(""))};
  if (const json::Value* versions = json::find(crd, "/spec/versions"); versions && versions->IsArray())
    for (const auto& v : versions->GetArray())
      if (json::get_bool(v, "/storage").value_or(false)) r.version = json::get_string(v, "/name").value_or("");
  return r;
}

// A program name as execvp would find it on PATH.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  std::istringstream path(getenv("PATH") ? getenv("PATH") : "");
  for (std::string dir; std::getline(path, dir, ':');)
    if (access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  return name;
}

double seconds_since(Steady::time_point t) { return std::chrono::duration<double>(Steady::now() - t).count(); }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---- child processes -------------------------------------------------------------------------

class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() { stop(); }

  bool spawn(const std::vector<std::string>& argv, const std::string& out, const std::string& err) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) pid_ = -1;
    return rc == 0;
  }
  pid_t pid() const { return pid_; }
  bool alive() const { return pid_ > 0 && kill(pid_, 0) == 0; }
  // SIGTERM, then SIGKILL after 40 s.
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    const auto deadline = Steady::now() + std::chrono::seconds(40);
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (Steady::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

// CPU time (user + system) of a live process, in milliseconds.
double cpu_ms(pid_t pid) {
  std::string stat = read_text(fmt::format("/proc/{}/stat", pid));
  auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(stat.substr(close + 2));
  std::string field;
  std::vector<std::string> fields;
  while (in >> field) fields.push_back(field);
  // After "pid (comm) ": state is field 3, utime field 14, stime field 15.
  if (fields.size() < 13) return 0;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (std::stod(fields[11]) + std::stod(fields[12])) * 1000.0 / ticks;
}

// Context switches (voluntary + involuntary) of a live process, summed over its threads: each is
// a thread that slept and was woken, or was preempted; a thread that already exited is not counted.
long context_switches(pid_t pid) {
  long total = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
    std::istringstream in(read_text(task.path().string() + "/status"));
    for (std::string line; std::getline(in, line);)
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0 || line.rfind("nonvoluntary_ctxt_switches:", 0) == 0)
        total += std::stol(line.substr(line.find(':') + 1));
  }
  return total;
}

long rss_kb(pid_t pid) {
  std::istringstream in(read_text(fmt::format("/proc/{}/status", pid)));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

template <class Pred>
bool wait_until(Pred pred, std::chrono::milliseconds timeout, std::chrono::milliseconds poll = std::chrono::milliseconds(50)) {
  const auto deadline = Steady::now() + timeout;
  while (!pred()) {
    if (Steady::now() > deadline) return false;
    std::this_thread::sleep_for(poll);
  }
  return true;
}

// ---- the cluster's write counts --------------------------------------------------------------

struct Writes {
  uint64_t operator_writes = 0;  // POST/PUT/PATCH/DELETE but events and the bench's own job creates
  uint64_t events = 0;
  std::map<std::string, uint64_t> by_key;
  Writes minus(const Writes& before) const {
    Writes w = *this;
    w.operator_writes -= before.operator_writes;
    w.events -= before.events;
    for (const auto& [k, v] : before.by_key) w.by_key[k] -= v;
    return w;
  }
  std::string describe() const {
    std::string out;
    for (const auto& [k, v] : by_key)
      if (v) out += fmt::format("{}={} ", k, v);
    return out;
  }
};

std::optional<Writes> cluster_writes(kube::RestClient& client) {
  kube::http::Request req;
  req.target = "/metrics";
  auto r = client.transport().send(req);
  if (!r || r->status != 200) return std::nullopt;
  static const std::regex line(
      R"re(apiserver_request_total\{code="(\d+)",component="apiserver",group="[^"]*",resource="([^"]*)",subresource="([^"]*)",verb="(POST|PUT|PATCH|DELETE|APPLY|DELETECOLLECTION)",version="[^"]*"\} (\d+))re");
  Writes w;
  std::istringstream in(r->body);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    const std::string resource = m[2].str(), verb = m[4].str();
    const uint64_t n = std::stoull(m[5].str());
    const std::string key = fmt::format("{} {}{}{}{}", verb, resource, m[3].str().empty() ? "" : "/", m[3].str(),
                                        m[1].str()[0] == '2' ? "" : " (" + m[1].str() + ")");
    w.by_key[key] += n;
    if (resource == "events") w.events += n;
    else if (verb == "POST" && (resource == "pytorchjobs" || resource == "mpijobs" || resource == "customresourcedefinitions")) continue;
    else w.operator_writes += n;
  }
  return w;
}

// ---- one cluster + operator ------------------------------------------------------------------

struct Options {
  std::string source = ".";
  std::string operator_bin = "build/bin/training-operator";
  std::string cluster_bin = "build/bin/localcluster";
  std::vector<int> jobs{250, 1000, 2500};
  std::vector<double> qps{20, 5000};
  int repeat = 3;
  int pod_seconds = 5;
  bool singles = false;
  bool keep = false;
  int foreign_pods = 0;
  int foreign_services = 0;
  // Runs the restarted operator under this command (e.g. "heaptrack -o /tmp/op" or
  // "perf record -g -o /tmp/op.perf --"), to see where the memory of a steady cache goes.
  std::string restart_wrapper;
  std::string run_wrapper;  // the same for the operator that runs the batch
};

class Rig {
 public:
  Rig(const Options& o, double qps) : o_(o), qps_(qps) {
    char tmpl[] = "/tmp/bench-scale-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  ~Rig() {
    op_.stop();
    cluster_.stop();
    if (!o_.keep) std::filesystem::remove_all(dir_);
    else std::cerr << "kept " << dir_ << "\n";
  }

  bool start_cluster() {
    if (!cluster_.spawn({o_.cluster_bin, "--listen", "127.0.0.1:0", "--kubeconfig-out", dir_ + "/kubeconfig",
                         "--nodes", "40", "--node-pods", "300", "--node-cpu", "4000", "--node-memory", "64Ti",
                         "--log-level", "warn"},
                        dir_ + "/cluster.out", dir_ + "/cluster.err"))
      return false;
    if (!wait_until([&] { return read_text(dir_ + "/cluster.out").rfind("ready ", 0) == 0 || !cluster_.alive(); },
                    std::chrono::seconds(30)) || !cluster_.alive())
      return false;
    auto cfg = kube::load_default_config(dir_ + "/kubeconfig", "");
    if (!cfg) return false;
    cfg->qps = -1;
    auto client = kube::RestClient::create(*cfg);
    if (!client) return false;
    client_ = std::move(*client);
    return install_crds();
  }

  bool start_operator(const std::string& log_name, const std::string& wrapper = "") {
    const int burst = std::max(30, static_cast<int>(qps_ * 1.5));
    std::vector<std::string> argv;
    std::istringstream words(wrapper);
    for (std::string w; words >> w;) argv.push_back(w);
    if (!argv.empty()) argv[0] = find_program(argv[0]);
    const std::vector<std::string> op_argv{o_.operator_bin, "--kubeconfig", dir_ + "/kubeconfig", "--enable-scheme", "*", "--disable-webhooks",
                    "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0", "--kube-api-qps",
                    fmt::format("{}", qps_), "--kube-api-burst", std::to_string(burst)};
    argv.insert(argv.end(), op_argv.begin(), op_argv.end());
    if (!op_.spawn(argv, dir_ + "/" + log_name + ".out", dir_ + "/" + log_name + ".err")) return false;
    const std::regex port_line(R"(--health-probe-bind-address serving on port (\d+))");
    const std::regex metrics_line(R"(--metrics-bind-address serving on port (\d+))");
    int port = 0;
    wait_until([&] {
      std::smatch m;
      const std::string log = read_text(dir_ + "/" + log_name + ".err");
      if (std::regex_search(log, m, port_line)) port = std::stoi(m[1].str());
      if (std::regex_search(log, m, metrics_line)) metrics_port_ = std::stoi(m[1].str());
      return (port != 0 && metrics_port_ != 0) || !op_.alive();
    }, std::chrono::seconds(60));
    if (port == 0) return false;
    kube::RestConfig probe;
    probe.scheme = "http";
    probe.host = "127.0.0.1";
    probe.port = port;
    auto transport = kube::Transport::create(probe);
    if (!transport) return false;
    return wait_until([&] {
      kube::http::Request req;
      req.target = "/readyz";
      auto r = (*transport)->send(req);
      return r && r->status == 200;
    }, std::chrono::seconds(120), std::chrono::milliseconds(100));
  }

  void stop_operator() { op_.stop(); }
  // The sum of the operator's samples of `metric` whose labels contain `label` ("" for all).
  double operator_metric(const std::string& metric, const std::string& label = "") {
    kube::RestConfig cfg;
    cfg.scheme = "http";
    cfg.host = "127.0.0.1";
    cfg.port = metrics_port_;
    auto transport = kube::Transport::create(cfg);
    if (!transport) return 0;
    kube::http::Request req;
    req.target = "/metrics";
    auto r = (*transport)->send(req);
    if (!r || r->status != 200) return 0;
    double sum = 0;
    std::istringstream in(r->body);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(metric, 0) != 0 || (line.size() > metric.size() && line[metric.size()] != '{' && line[metric.size()] != ' ')) continue;
      if (!label.empty() && line.find(label) == std::string::npos) continue;
      sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
    return sum;
  }
  kube::RestClient& client() { return *client_; }
  // The operator's process: under a wrapper, the wrapper's only child.
  pid_t operator_pid() const {
    std::string children = read_text(fmt::format("/proc/{}/task/{}/children", op_.pid(), op_.pid()));
    std::istringstream in(children);
    pid_t child = 0;
    return in >> child ? child : op_.pid();
  }
  pid_t cluster_pid() const { return cluster_.pid(); }
  Writes writes() { return cluster_writes(*client_).value_or(Writes{}); }

  // Waits until no write (events included) happened for `quiet`, at most `limit`.
  void settle(std::chrono::seconds quiet, std::chrono::seconds limit) {
    const auto deadline = Steady::now() + limit;
    Writes last = writes();
    auto last_change = Steady::now();
    while (Steady::now() < deadline && Steady::now() - last_change < quiet) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      Writes now = writes();
      if (now.operator_writes + now.events != last.operator_writes + last.events) {
        last = now;
        last_change = Steady::now();
      }
    }
  }

 private:
  bool install_crds() {
    // Every kind `--enable-scheme '*'` serves: the generated kustomization lists them all, so a
    // module added later is installed without touching the benchmark.
    const std::string crds_dir = o_.source + "/manifests/crds/";
    auto kustomization = json::parse_yaml(read_text(crds_dir + "kustomization.yaml"));
    const json::Value* resources =
        kustomization && !kustomization->empty() ? json::find((*kustomization)[0].root(), "/resources") : nullptr;
    if (!resources || !resources->IsArray()) {
      std::cerr << "cannot read the resources of " << crds_dir << "kustomization.yaml\n";
      return false;
    }
    std::vector<kube::GroupVersionResource> served;
    for (const auto& resource : resources->GetArray()) {
      if (!resource.IsString()) continue;
      const std::string file = resource.GetString();
      auto docs = json::parse_yaml(read_text(crds_dir + file));
      if (!docs || docs->empty()) {
        std::cerr << "cannot read " << crds_dir << file << "\n";
        return false;
      }
      for (auto& crd : *docs) {
        // Both MPIJob versions served without the operator's conversion webhook (the webhooks
        // are off here): a v1 list shows the v2beta1 objects with apiVersion rewritten, which
        // the v1 module leaves alone (their managedBy is mpi-operator's).
        if (json::find(crd.root(), "/spec/conversion")) {
          json::remove(crd, "/spec/conversion");
          (void)json::set_string(crd, "/spec/conversion/strategy", "None");
        }
        if (!client_->create(kCrds, "", crd.root())) return false;
        served.push_back(storage_resource(crd.root()));
      }
    }
    return wait_until([&] {
      for (const auto& resource : served)
        if (!client_->list(resource, "", {})) return false;  // all namespaces, or cluster-scoped
      return true;
    }, std::chrono::seconds(30), std::chrono::milliseconds(100));
  }

  const Options& o_;
  double qps_;
  std::string dir_;
  Child cluster_;
  Child op_;
  int metrics_port_ = 0;
  std::unique_ptr<kube::RestClient> client_;
};

json::Document pytorch_job(const std::string& name, int pod_seconds) {
  auto replica = [&](int replicas) {
    return fmt::format(
        R"({{"replicas":{},"restartPolicy":"OnFailure","template":{{"metadata":{{"annotations":{{"sim.unitrain.io/duration":"{}s"}}}},)"
        R"("spec":{{"containers":[{{"name":"pytorch","image":"docker.io/library/python:3.11-slim","command":["python","-c","pass"]}}]}}}}}})",
        replicas, pod_seconds);
  };
  return *json::Document::parse(fmt::format(
      R"({{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{{"name":"{}","namespace":"default"}},)"
      R"("spec":{{"runPolicy":{{"cleanPodPolicy":"None"}},"pytorchReplicaSpecs":{{"Master":{},"Worker":{}}}}}}})",
      name, replica(1), replica(3)));
}

json::Document mpi_v2_job(const std::string& name) {
  return *json::Document::parse(fmt::format(
      R"({{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{{"name":"{}","namespace":"default"}},)"
      R"("spec":{{"slotsPerWorker":1,"runPolicy":{{"cleanPodPolicy":"Running","managedBy":"kubeflow.org/mpi-operator"}},)"
      R"("mpiReplicaSpecs":{{"Launcher":{{"replicas":1,"template":{{"metadata":{{"annotations":{{"sim.unitrain.io/duration":"2s"}}}},)"
      R"("spec":{{"containers":[{{"name":"launcher","image":"mpioperator/openmpi:0.5.0","command":["mpirun","hostname"]}}]}}}}}},)"
      R"("Worker":{{"replicas":2,"template":{{"metadata":{{"annotations":{{"sim.unitrain.io/duration":"600s"}}}},)"
      R"("spec":{{"containers":[{{"name":"worker","image":"mpioperator/openmpi:0.5.0","command":["/usr/sbin/sshd","-De"]}}]}}}}}}}}}}}})",
      name));
}

bool has_true_condition(const json::Value& job, std::string_view type) {
  const json::Value* conds = json::find(job, "/status/conditions");
  if (!conds || !conds->IsArray()) return false;
  for (const auto& c : conds->GetArray())
    if (json::get_string(c, "/type") == type && json::get_string(c, "/status") == "True") return true;
  return false;
}

// ---- a batch run -------------------------------------------------------------------------------

struct RunResult {
  bool ok = false;
  int jobs = 0;
  double qps = 0;
  double kib_per_pod_end = 0, kib_per_pod_restart = 0;
  double rss_start_mb = 0, rss_end_mb = 0, rss_restart_mb = 0;
  double operator_ms_per_job = 0, cluster_ms_per_job = 0;
  double operator_switches_per_job = 0;
  // Up to the moment the last job turned terminal: without the Events still queued then, which the
  // recorder writes at --events-qps after the jobs are done (operator_ms_per_job includes them).
  double operator_ms_per_job_to_terminal = 0;
  double writes_per_job = 0, events_per_job = 0;
  double pods_created_s = 0, all_succeeded_s = 0;
  double delay_p50_s = 0, delay_p99_s = 0, delay_max_s = 0;
  uint64_t restart_writes = 0;
  double restart_operator_ms = 0;
  double reconciles_per_job = 0;
  std::string writes_detail;
};

// What this program's own watches saw, with the time it saw it.
class Observer {
 public:
  explicit Observer(int jobs) : jobs_(jobs) {}

  void on_pod(const json::Value& pod) {
    const std::string job(json::get_string(pod, "/metadata/labels/training.kubeflow.org~1job-name").value_or(""));
    const std::string name(json::get_string(pod, "/metadata/name").value_or(""));
    const bool done = json::get_string(pod, "/status/phase") == "Succeeded";
    const auto now = Steady::now();
    std::lock_guard g(mu_);
    if (seen_pods_.insert(name).second && static_cast<int>(seen_pods_.size()) == 4 * jobs_) all_pods_ = now;
    if (done && finished_pods_.insert(name).second) {
      auto& j = per_job_[job];
      ++j.finished_pods;
      if (j.finished_pods == 4) j.last_pod_finished = now;
    }
  }
  void on_job(const json::Value& job) {
    if (!has_true_condition(job, "Succeeded") && !has_true_condition(job, "Failed")) return;
    const std::string name(json::get_string(job, "/metadata/name").value_or(""));
    const auto now = Steady::now();
    std::lock_guard g(mu_);
    auto& j = per_job_[name];
    if (j.terminal) return;
    j.terminal = now;
    if (++terminal_jobs_ == jobs_) all_terminal_ = now;
  }
  int terminal_jobs() const {
    std::lock_guard g(mu_);
    return terminal_jobs_;
  }
  int progress() const {
    std::lock_guard g(mu_);
    return static_cast<int>(seen_pods_.size() + finished_pods_.size()) + terminal_jobs_;
  }
  void fill(RunResult& r, Steady::time_point t0) const {
    std::lock_guard g(mu_);
    auto since = [&](Steady::time_point t) { return std::chrono::duration<double>(t - t0).count(); };
    if (all_pods_) r.pods_created_s = since(*all_pods_);
    if (all_terminal_) r.all_succeeded_s = since(*all_terminal_);
    std::vector<double> delays;
    for (const auto& [_, j] : per_job_)
      if (j.terminal && j.last_pod_finished)
        delays.push_back(std::max(0.0, std::chrono::duration<double>(*j.terminal - *j.last_pod_finished).count()));
    std::sort(delays.begin(), delays.end());
    auto pct = [&](double p) {
      return delays.empty() ? 0.0 : delays[std::min(delays.size() - 1, static_cast<size_t>(p * delays.size()))];
    };
    r.delay_p50_s = pct(0.50);
    r.delay_p99_s = pct(0.99);
    r.delay_max_s = delays.empty() ? 0.0 : delays.back();
  }

 private:
  struct Job {
    int finished_pods = 0;
    std::optional<Steady::time_point> last_pod_finished, terminal;
  };
  const int jobs_;
  mutable std::mutex mu_;
  std::set<std::string> seen_pods_, finished_pods_;
  std::unordered_map<std::string, Job> per_job_;
  int terminal_jobs_ = 0;
  std::optional<Steady::time_point> all_pods_, all_terminal_;
};

json::Document foreign_pod(int i) {
  return *json::Document::parse(fmt::format(
      R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"foreign-{}","namespace":"default"}},)"
      R"("spec":{{"containers":[{{"name":"web","image":"docker.io/library/nginx:1.27","ports":[{{"containerPort":80}}]}}]}}}})",
      i));
}

json::Document foreign_service(int i) {
  return *json::Document::parse(fmt::format(
      R"({{"apiVersion":"v1","kind":"Service","metadata":{{"name":"foreign-{}","namespace":"default"}},)"
      R"("spec":{{"selector":{{"app":"web-{}"}},"ports":[{{"port":80}}]}}}})",
      i, i));
}

// Creates `n` objects made by `make` in "default", four at a time.
void create_all(kube::Client& client, const kube::GroupVersionResource& resource, int n, json::Document (*make)(int)) {
  std::vector<std::thread> creators;
  std::atomic<int> next{0};
  for (int t = 0; t < 4; ++t) {
    creators.emplace_back([&] {
      for (int i = next++; i < n; i = next++)
        if (!client.create(resource, "default", make(i).root())) std::cerr << "create " << resource.resource << " " << i << " failed\n";
    });
  }
  for (auto& t : creators) t.join();
}

RunResult run_batch(const Options& o, int n, double qps) {
  RunResult r;
  r.jobs = n;
  r.qps = qps;
  Rig rig(o, qps);
  if (!rig.start_cluster()) {
    std::cerr << "cluster did not start\n";
    return r;
  }
  create_all(rig.client(), kPods, o.foreign_pods, foreign_pod);
  create_all(rig.client(), kServices, o.foreign_services, foreign_service);
  if (!rig.start_operator("operator", o.run_wrapper)) {
    std::cerr << "operator did not get ready\n";
    return r;
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const long rss0 = rss_kb(rig.operator_pid());
  r.rss_start_mb = rss0 / 1024.0;
  const double op_cpu0 = cpu_ms(rig.operator_pid()), cl_cpu0 = cpu_ms(rig.cluster_pid());
  const long op_switches0 = context_switches(rig.operator_pid());
  const Writes w0 = rig.writes();

  kube::RealClock clock;
  Observer observer(n);
  kube::InformerOptions pods;
  pods.resource = kPods;
  pods.namespaces = {"default"};
  pods.label_selector = "training.kubeflow.org/operator-name=pytorchjob-controller";
  pods.fields = kube::pod_fields();
  kube::Informer pod_watch(rig.client(), clock, pods);
  pod_watch.add_handlers({[&](const json::Value& p) { observer.on_pod(p); },
                          [&](const json::Value&, const json::Value& p) { observer.on_pod(p); }, {}, {}});
  kube::InformerOptions jobs;
  jobs.resource = kPyTorchJobs;
  jobs.namespaces = {"default"};
  kube::Informer job_watch(rig.client(), clock, jobs);
  job_watch.add_handlers({[&](const json::Value& j) { observer.on_job(j); },
                          [&](const json::Value&, const json::Value& j) { observer.on_job(j); }, {}, {}});
  pod_watch.start();
  job_watch.start();
  pod_watch.wait_for_sync(std::chrono::seconds(30));
  job_watch.wait_for_sync(std::chrono::seconds(30));

  const auto t0 = Steady::now();
  {
    std::vector<std::thread> submitters;
    std::atomic<int> next{0};
    for (int t = 0; t < 4; ++t) {
      submitters.emplace_back([&] {
        for (int i = next++; i < n; i = next++) {
          auto job = pytorch_job(fmt::format("bench-{}", i), o.pod_seconds);
          if (!rig.client().create(kPyTorchJobs, "default", job.root())) std::cerr << "create bench-" << i << " failed\n";
        }
      });
    }
    for (auto& t : submitters) t.join();
  }
  // Done when every job is terminal; a run that makes no progress for 5 minutes is given up.
  int last_progress = -1;
  auto last_change = Steady::now();
  while (observer.terminal_jobs() < n) {
    const int p = observer.progress();
    if (p != last_progress) {
      last_progress = p;
      last_change = Steady::now();
    }
    if (Steady::now() - last_change > std::chrono::minutes(5)) {
      std::cerr << fmt::format("no progress for 5 minutes: {}/{} jobs terminal\n", observer.terminal_jobs(), n);
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  r.operator_ms_per_job_to_terminal = (cpu_ms(rig.operator_pid()) - op_cpu0) / n;
  observer.fill(r, t0);
  rig.settle(std::chrono::seconds(3), std::chrono::seconds(300));
  const Writes w1 = rig.writes().minus(w0);
  const long rss1 = rss_kb(rig.operator_pid());
  r.operator_ms_per_job = (cpu_ms(rig.operator_pid()) - op_cpu0) / n;
  r.cluster_ms_per_job = (cpu_ms(rig.cluster_pid()) - cl_cpu0) / n;
  r.operator_switches_per_job = static_cast<double>(context_switches(rig.operator_pid()) - op_switches0) / n;
  r.writes_per_job = static_cast<double>(w1.operator_writes) / n;
  r.events_per_job = static_cast<double>(w1.events) / n;
  r.writes_detail = w1.describe();
  r.reconciles_per_job = rig.operator_metric("controller_runtime_reconcile_total", "pytorchjob-controller") / n;
  r.rss_end_mb = rss1 / 1024.0;
  r.kib_per_pod_end = static_cast<double>(rss1 - rss0) / (4.0 * n);

  // Restart over the steady cluster: nothing to write; the RSS is the caches'.
  rig.stop_operator();
  const Writes w2 = rig.writes();
  if (!rig.start_operator("operator-restart", o.restart_wrapper)) {
    std::cerr << "operator did not get ready after the restart\n";
    return r;
  }
  rig.settle(std::chrono::seconds(5), std::chrono::seconds(120));
  r.restart_writes = rig.writes().minus(w2).operator_writes;
  const long rss2 = rss_kb(rig.operator_pid());
  r.rss_restart_mb = rss2 / 1024.0;
  r.kib_per_pod_restart = static_cast<double>(rss2 - rss0) / (4.0 * n);
  r.restart_operator_ms = cpu_ms(rig.operator_pid());
  pod_watch.stop();
  job_watch.stop();
  r.ok = true;
  return r;
}

// ---- single jobs ---------------------------------------------------------------------------------

void run_singles(const Options& o) {
  Rig rig(o, 20);
  if (!rig.start_cluster() || !rig.start_operator("operator")) {
    std::cerr << "singles: cluster or operator did not start\n";
    return;
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto run_one = [&](const char* what, const kube::GroupVersionResource& gvr, json::Document job) {
    const Writes before = rig.writes();
    const std::string name(json::get_string(job.root(), "/metadata/name").value_or(""));
    if (!rig.client().create(gvr, "default", job.root())) {
      std::cerr << what << ": create failed\n";
      return;
    }
    const bool done = wait_until([&] {
      auto j = rig.client().get(gvr, "default", name);
      return j && has_true_condition(j->root(), "Succeeded");
    }, std::chrono::seconds(120), std::chrono::milliseconds(200));
    rig.settle(std::chrono::seconds(3), std::chrono::seconds(60));
    const Writes w = rig.writes().minus(before);
    fmt::print("{:<52} {} writes without events ({} events){}\n  {}\n", what, w.operator_writes, w.events,
               done ? "" : " [did not succeed]", w.describe());
  };
  run_one("PyTorchJob 1 Master + 3 Workers, alone", kPyTorchJobs, pytorch_job("single-pytorch", o.pod_seconds));
  run_one("MPIJob v2beta1, 2 workers, cleanPodPolicy Running", kMpiJobsV2, mpi_v2_job("single-mpi"));
  rig.stop_operator();
  const Writes before = rig.writes();
  if (!rig.start_operator("operator-restart")) return;
  rig.settle(std::chrono::seconds(5), std::chrono::seconds(60));
  const Writes w = rig.writes().minus(before);
  fmt::print("{:<52} {} writes without events ({} events)\n", "operator restart over the two finished jobs",
             w.operator_writes, w.events);
}

// ---- the table -------------------------------------------------------------------------------------

std::string spread(std::vector<double> v, const char* format) {
  if (v.empty()) return "-";
  std::sort(v.begin(), v.end());
  const double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  const std::string m = fmt::format(fmt::runtime(format), median);
  if (v.size() == 1) return m;
  return fmt::format("{} [{}-{}]", m, fmt::format(fmt::runtime(format), v.front()), fmt::format(fmt::runtime(format), v.back()));
}

std::vector<int> parse_ints(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stoi(item));
  return out;
}

std::vector<double> parse_doubles(const std::string& s) {
  std::vector<double> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stod(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Unitrain operator at scale on the local cluster (every framework enabled)"};
  Options o;
  std::string jobs = "250,1000,2500", qps = "20,5000";
  app.add_option("--source", o.source, "source tree (for manifests/crds)")->capture_default_str();
  app.add_option("--operator", o.operator_bin, "training-operator binary")->capture_default_str();
  app.add_option("--localcluster", o.cluster_bin, "localcluster binary")->capture_default_str();
  app.add_option("--jobs", jobs, "batch sizes, comma-separated")->capture_default_str();
  app.add_option("--qps", qps, "operator --kube-api-qps values, comma-separated")->capture_default_str();
  app.add_option("--repeat", o.repeat, "runs per batch size and QPS")->capture_default_str();
  app.add_option("--pod-seconds", o.pod_seconds, "how long each pod runs")->capture_default_str();
  app.add_flag("--singles", o.singles, "also count the writes of single jobs and of a restart");
  app.add_flag("--keep", o.keep, "keep each run's directory (logs, kubeconfig)");
  app.add_option("--restart-wrapper", o.restart_wrapper,
                 "command the restarted operator runs under, e.g. 'heaptrack -o /tmp/op' (a profile of the steady caches)");
  app.add_option("--run-wrapper", o.run_wrapper, "the same for the operator that runs the batch");
  app.add_option("--foreign-pods", o.foreign_pods, "pods of nobody's (no label, no owner) created before the operator starts")
      ->capture_default_str();
  app.add_option("--foreign-services", o.foreign_services, "Services of nobody's created before the operator starts")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  o.jobs = parse_ints(jobs);
  o.qps = parse_doubles(qps);
  signal(SIGPIPE, SIG_IGN);

  fmt::print("bench_scale: operator {}, cluster {}, {} s pods, {} CPUs, load {}, foreign pods {}, Services {}\n",
             o.operator_bin, o.cluster_bin, o.pod_seconds, std::thread::hardware_concurrency(),
             read_text("/proc/loadavg").substr(0, 14), o.foreign_pods, o.foreign_services);
  if (o.singles) run_singles(o);

  std::map<std::pair<double, int>, std::vector<RunResult>> results;
  for (double q : o.qps) {
    for (int n : o.jobs) {
      for (int i = 0; i < o.repeat; ++i) {
        const auto started = Steady::now();
        RunResult r = run_batch(o, n, q);
        fmt::print(
            "run qps={} jobs={} #{}: ok={} KiB/pod end={:.2f} restart={:.2f} RSS start={:.1f} MB end={:.1f} MB restart={:.1f} MB "
            "operator={:.2f} ms/job ({:.2f} to terminal) cluster={:.2f} ms/job operator context switches={:.1f}/job "
            "writes={:.2f}/job events={:.2f}/job pods created {:.1f} s "
            "all terminal {:.1f} s delay p50={:.2f} s p99={:.2f} s max={:.2f} s restart writes={} restart CPU={:.0f} ms "
            "reconciles={:.1f}/job ({:.0f} s wall)\n  writes: {}\n",
            q, n, i + 1, r.ok, r.kib_per_pod_end, r.kib_per_pod_restart, r.rss_start_mb, r.rss_end_mb, r.rss_restart_mb,
            r.operator_ms_per_job, r.operator_ms_per_job_to_terminal, r.cluster_ms_per_job, r.operator_switches_per_job,
            r.writes_per_job, r.events_per_job, r.pods_created_s,
            r.all_succeeded_s, r.delay_p50_s, r.delay_p99_s, r.delay_max_s, r.restart_writes, r.restart_operator_ms,
            r.reconciles_per_job, seconds_since(started), r.writes_detail);
        std::fflush(stdout);
        if (r.ok) results[{q, n}].push_back(r);
      }
    }
  }

  fmt::print("\n| qps | jobs | KiB/pod (restart) | RSS MB end / restart | operator ms/job | to terminal | cluster ms/job | "
             "writes/job | events/job | pods created s | all Succeeded s | terminal delay p50 s | p99 s | restart writes |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& [key, runs] : results) {
    auto col = [&](double RunResult::*field) {
      std::vector<double> v;
      for (const auto& r : runs) v.push_back(r.*field);
      return v;
    };
    std::vector<double> restart_writes;
    for (const auto& r : runs) restart_writes.push_back(static_cast<double>(r.restart_writes));
    fmt::print("| {} | {} | {} | {} / {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", key.first, key.second,
               spread(col(&RunResult::kib_per_pod_restart), "{:.2f}"), spread(col(&RunResult::rss_end_mb), "{:.0f}"),
               spread(col(&RunResult::rss_restart_mb), "{:.0f}"), spread(col(&RunResult::operator_ms_per_job), "{:.2f}"),
               spread(col(&RunResult::operator_ms_per_job_to_terminal), "{:.2f}"),
               spread(col(&RunResult::cluster_ms_per_job), "{:.2f}"), spread(col(&RunResult::writes_per_job), "{:.2f}"),
               spread(col(&RunResult::events_per_job), "{:.2f}"),
               spread(col(&RunResult::pods_created_s), "{:.0f}"), spread(col(&RunResult::all_succeeded_s), "{:.0f}"),
               spread(col(&RunResult::delay_p50_s), "{:.1f}"), spread(col(&RunResult::delay_p99_s), "{:.1f}"),
               spread(restart_writes, "{:.0f}"));
  }
  return 0;
}
