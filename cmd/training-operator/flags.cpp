#include "cmd/training-operator/flags.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "cmd/training-operator/http_server.h"
#include "cmd/training-operator/logging.h"
#include "core/api/labels.h"
#include "core/framework/abi/unitrain_plugin.h"
#include "core/webhook/handler.h"

namespace unitrain::operator_cmd {

namespace {

constexpr int kUsageError = 2;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// CLI11 validators over apimachinery's name rules; CLI11 prefixes the flag name to the message.
CLI::Validator kube_name(std::vector<std::string> (*rule)(std::string_view), const char* what) {
  return CLI::Validator(
      [rule, what](const std::string& v) -> std::string {
        auto errors = rule(v);
        return errors.empty() ? std::string() : fmt::format("\"{}\" is not a valid {}: {}", v, what, errors.front());
      },
      "NAME", what);
}

CLI::Validator duration_check() {
  return CLI::Validator(
      [](std::string& v) {
        return parse_duration(v) ? std::string() : "must be a positive number of h, m or s, not \"" + v + "\"";
      },
      "DURATION", "duration");
}

// Gang scheduling backends: "volcano" (any case, as upstream compares it) or the schedulerName of a
// scheduler-plugins scheduler, which pods carry in spec.schedulerName (a DNS-1123 subdomain).
std::string check_gang_scheduler(const std::string& v) {
  if (v.empty() || lower(v) == "volcano") return {};
  auto errors = api::validate_dns1123_subdomain(v);
  return errors.empty() ? std::string()
                        : fmt::format("\"{}\" is neither volcano nor a valid scheduler name: {}", v, errors.front());
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "training-operator: %s\n", message.c_str());
  return kUsageError;
}

// The relations client-go's leaderelection checks (and kube::LeaderElector::create, jitter 1.2).
std::string check_election_timing(const Flags& f) {
  const auto lease = *parse_duration(f.leader_elect_lease_duration);
  const auto renew = *parse_duration(f.leader_elect_renew_deadline);
  const auto retry = *parse_duration(f.leader_elect_retry_period);
  if (lease <= renew)
    return fmt::format("--leader-elect-lease-duration ({}) must be greater than --leader-elect-renew-deadline ({})",
                       f.leader_elect_lease_duration, f.leader_elect_renew_deadline);
  if (static_cast<double>(renew.count()) <= 1.2 * static_cast<double>(retry.count()))
    return fmt::format("--leader-elect-renew-deadline ({}) must be greater than 1.2 times --leader-elect-retry-period ({})",
                       f.leader_elect_renew_deadline, f.leader_elect_retry_period);
  return {};
}

Result<std::vector<std::string>> resolve_enabled(const Flags& f, const framework::Registry& registry) {
  const auto eo = enablement_options(f);
  std::vector<std::string> schemes = f.enable_scheme;
  if (schemes.empty()) {
    // Every framework, but a kind served by several modules only in its default version: each
    // version alone has a single-version CRD; both at once are asked for by name (or '*').
    schemes.push_back("*");
    for (const auto& reg : registry.all()) {
      auto it = eo.default_version.find(lower(reg.descriptor.kind));
      if (it != eo.default_version.end() && it->second != reg.descriptor.version) schemes.push_back("-" + reg.descriptor.name);
    }
  }
  auto enabled = registry.resolve(schemes);
  if (!enabled) return fail("--enable-scheme: " + enabled.error().message);
  if (enabled->empty()) return fail(std::string("--enable-scheme: no framework left enabled"));
  return std::move(*enabled);
}

}  // namespace

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

Result<Flags, int> parse_flags(int argc, const char* const* argv, const framework::Registry& registry) {
  Flags f;
  if (auto ns = env("KUBEFLOW_NAMESPACE"); !ns.empty()) f.namespaces = {ns};
  if (auto ns = env("MY_POD_NAMESPACE"); !ns.empty()) f.webhook_namespace = ns;
  f.cluster_domain = env("CUSTOM_CLUSTER_DOMAIN");

  CLI::App app{"Unitrain training operator: runs Kubeflow training jobs (PyTorchJob, MPIJob, ...)"};
  app.get_formatter()->column_width(44);
  // Go's flag package keeps the last value of a flag given twice (an overlay that appends an
  // argument the base already has); --enable-scheme and --namespace keep every value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  // UNITRAIN_VERSION: CMake's project(VERSION), defined for this target in its CMakeLists.txt.
  app.set_version_flag("--version", "training-operator " UNITRAIN_VERSION, "Print the version and exit");
  app.add_option("--enable-scheme", f.enable_scheme,
                 "Framework(s) to enable; repeatable, comma lists allowed, '*' for all, '-name' removes. "
                 "Default: all, MPIJob only in --mpi-default-version. The bare MPIJob (mpijob) is kubeflow.org/v1, "
                 "as in training-operator; v2beta1 is mpijob-v2. Accepted: " +
                     fmt::format("{}", fmt::join(registry.accepted_names(), ", ")))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--gang-scheduler-name,--gang-scheduling", f.gang_scheduler_name,
                 "Gang scheduler: 'volcano' or a scheduler-plugins scheduler name; empty disables gang scheduling "
                 "(--gang-scheduling: mpi-operator's name)")
      ->check(CLI::Validator(check_gang_scheduler, "NAME", "gang scheduler"));
  app.add_option("--namespace", f.namespaces,
                 "Namespace(s) to watch; repeatable. Default: $KUBEFLOW_NAMESPACE, else all namespaces")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(kube_name(api::validate_dns1123_label, "namespace"));
  app.add_option("--controller-threads,--threadiness", f.controller_threads,
                 "Reconcile workers per framework controller (--threadiness: mpi-operator's name)")
      ->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_flag("--leader-elect", f.leader_elect,
               "Use a coordination.k8s.io Lease so only one replica reconciles (--leader-elect=false to disable)");
  app.add_option("--leader-election-id", f.leader_election_id, "Name of the leader-election Lease")
      ->capture_default_str()->check(kube_name(api::validate_dns1123_subdomain, "Lease name"));
  app.add_option("--leader-election-namespace", f.leader_election_namespace,
                 "Namespace of the Lease (default: the namespace of the kubeconfig context / pod)")
      ->check(kube_name(api::validate_dns1123_label, "namespace"));
  app.add_option("--leader-elect-lease-duration", f.leader_elect_lease_duration,
                 "How long followers wait after the last renewal before taking the Lease over")
      ->capture_default_str()->check(duration_check());
  app.add_option("--leader-elect-renew-deadline", f.leader_elect_renew_deadline,
                 "How long the leader keeps trying to renew before it stops leading; less than the lease duration")
      ->capture_default_str()->check(duration_check());
  app.add_option("--leader-elect-retry-period", f.leader_elect_retry_period,
                 "Interval between acquire and renew attempts (with up to 1.2x jitter for candidates); "
                 "1.2x it must be less than the renew deadline")
      ->capture_default_str()->check(duration_check());
  app.add_option("--metrics-bind-address", f.metrics_bind_address,
                 "host:port of the Prometheus /metrics endpoint; '0' disables it")->capture_default_str();
  app.add_option("--health-probe-bind-address", f.health_probe_bind_address,
                 "host:port of /healthz and /readyz; '0' disables them")->capture_default_str();
  app.add_option("--kubeconfig,--kubeConfig", f.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, in-cluster config, then ~/.kube/config; --kubeConfig: "
                 "mpi-operator's name)")
      ->check(CLI::ExistingFile);
  app.add_option("--kube-api-qps", f.kube_api_qps, "Client-side QPS limit towards the API server")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--kube-api-burst", f.kube_api_burst, "Client-side burst towards the API server")
      ->capture_default_str()->check(CLI::Range(1, 100000));
  app.add_option("--events-qps", f.events_qps,
                 "Client-side QPS limit of event writes, a budget of their own beside --kube-api-qps")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--events-burst", f.events_burst, "Client-side burst of event writes")
      ->capture_default_str()->check(CLI::Range(1, 100000));
  std::string zap_level, log_format, zap_encoder, zap_stacktrace, zap_time;
  bool zap_devel = false;
  auto* level_opt = app.add_option("--zap-log-level", zap_level,
                                   "Log level: debug, info, warn, error, dpanic, panic, fatal, or an integer "
                                   "verbosity > 0 (default: info; debug with --zap-devel)")
                        ->check(CLI::Validator(check_zap_level, "LEVEL", "zap level"));
  auto* devel_opt = app.add_flag("--zap-devel", zap_devel,
                                 "Development mode defaults (encoder console, level debug, stacktraces from warn); "
                                 "--zap-devel=false: production defaults (json, info, stacktraces from error)");
  auto* format_opt = app.add_option("--log-format", log_format, "Log format: json or text (the --zap-encoder setting)")
                         ->check(CLI::IsMember({"json", "text"}));
  auto* encoder_opt = app.add_option("--zap-encoder", zap_encoder, "Zap log encoding: json or console")
                          ->check(CLI::Validator(check_zap_encoder, "ENCODER", "zap encoder"));
  auto* stack_opt = app.add_option("--zap-stacktrace-level", zap_stacktrace,
                                   "Level at and above which records carry a stacktrace: info, error or panic "
                                   "(default: panic; warn with --zap-devel, error with --zap-devel=false)")
                        ->check(CLI::Validator(check_stacktrace_level, "LEVEL", "stacktrace level"));
  auto* time_opt = app.add_option("--zap-time-encoding", zap_time,
                                  "Time encoding: epoch, millis, nanos, iso8601, rfc3339 or rfc3339nano (default: "
                                  "rfc3339, UTC)")
                       ->check(CLI::Validator(check_time_encoding, "ENCODING", "time encoding"));
  app.add_option("--cluster-domain", f.cluster_domain,
                 "DNS domain of the cluster (e.g. cluster.local) that MPIJob v2 appends to the hostnames in its "
                 "hostfile and discover_hosts.sh and to its workers' DNS search path; default: "
                 "$CUSTOM_CLUSTER_DOMAIN, else none")
      ->check(kube_name(api::validate_dns1123_subdomain, "cluster domain"));
  app.add_option("--mpi-default-version", f.mpi_default_version,
                 "MPIJob version enabled when --enable-scheme is not given, and, with both MPIJob "
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
  auto* webhook_host = app.add_option("--webhook-host", f.webhook_host,
                                      "Address the webhook server binds to (default: every interface; with "
                                      "--embedded-cluster 127.0.0.1)");
  auto* webhook_bind = app.add_option("--webhook-bind-address", f.webhook_bind_address,
                                      "host:port of the webhook server, instead of --webhook-host and "
                                      "--webhook-server-port (e.g. 127.0.0.1:9443 out of a cluster)")
                           ->excludes(webhook_port)->excludes(webhook_host);
  app.add_option("--webhook-service-name", f.webhook_service_name,
                 "Service in front of the webhook server; the certificate names <name>.<namespace>.svc")
      ->capture_default_str();
  app.add_option("--webhook-namespace", f.webhook_namespace,
                 "Namespace of that Service and of the certificate Secret: the operator's own (default: "
                 "$MY_POD_NAMESPACE, which the Deployment sets to the pod's namespace, else kubeflow); it must exist")
      ->capture_default_str()->check(kube_name(api::validate_dns1123_label, "namespace"));
  app.add_option("--webhook-secret-name", f.webhook_secret_name, "Secret holding the webhook CA and certificate")
      ->capture_default_str();
  app.add_option("--webhook-cert-validity", f.webhook_cert_validity,
                 "Validity of generated webhook certificates (e.g. 87600h, 30m, 90s); they are replaced when a "
                 "quarter of it (at most 90 days) remains")
      ->capture_default_str()->check(duration_check());
  app.add_flag("--webhook-persist-defaults", f.webhook_persist_defaults,
               "Have the defaulting webhooks write each framework's defaults into new jobs (the reference "
               "operators apply them in memory only)");
  // Read before the other flags (module_paths, frameworks.h): loaded modules are in `registry`.
  std::vector<std::string> module_files, module_dirs;
  app.add_option("--framework-module", module_files,
                 "Shared library of a framework module to load at start (plugin ABI " +
                     fmt::format("{}.{}", UNITRAIN_PLUGIN_ABI_MAJOR, UNITRAIN_PLUGIN_ABI_MINOR) +
                     "); repeatable. It runs inside the operator: load only modules you trust");
  app.add_option("--framework-module-dir", module_dirs, "Load every *.so in this directory as a framework module; repeatable");
  for (const auto& reg : registry.all()) {
    for (const auto& o : reg.options) {
      f.framework_options[o.name] = o.default_value;
      app.add_option("--" + o.name, f.framework_options[o.name], fmt::format("[{}] {}", reg.descriptor.kind, o.help))
          ->capture_default_str();
    }
  }
  // Go's flag package, which parses training-operator's and mpi-operator's flags, takes one dash
  // as well as two ("-enable-scheme=tfjob", "-namespace ml"). Only a name this program defines is
  // rewritten, so a value that starts with a dash ("--enable-scheme -tfjob") stays a value.
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() > 2 && arg[0] == '-' && arg[1] != '-') {
      const std::string name = "-" + arg.substr(0, arg.find('='));
      if (app.get_option_no_throw(name) != nullptr) arg.insert(0, "-");
    }
    args.push_back(std::move(arg));
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  if (argc > 0) app.name(argv[0]);
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return fail(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return fail(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return fail(app.exit(e));
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "training-operator: %s\nRun with --help for the list of flags.\n", e.what());
    return fail(kUsageError);
  }
  f.embedded = embedded->count() > 0;
  auto given = [](CLI::Option* o, const std::string& v) { return o->count() > 0 ? std::optional<std::string>(v) : std::nullopt; };
  f.log_flags.level = given(level_opt, zap_level);
  f.log_flags.log_format = given(format_opt, log_format);
  f.log_flags.encoder = given(encoder_opt, zap_encoder);
  f.log_flags.stacktrace = given(stack_opt, zap_stacktrace);
  f.log_flags.time_encoding = given(time_opt, zap_time);
  if (devel_opt->count() > 0) f.log_flags.devel = zap_devel;
  auto logging = resolve_log_options(f.log_flags);
  if (!logging) return fail(usage_error(logging.error().message));
  f.logging = std::move(*logging);
  f.webhook_port_given = webhook_port->count() > 0;
  f.webhook_host_given = webhook_host->count() > 0;
  if (webhook_bind->count() > 0) {
    auto hp = parse_bind_address("--webhook-bind-address", f.webhook_bind_address);
    if (!hp) return fail(usage_error(hp.error().message));
    f.webhook_host = hp->first;
    f.webhook_server_port = hp->second;
    f.webhook_host_given = f.webhook_port_given = true;
  }
  if (auto why = check_election_timing(f); !why.empty()) return fail(usage_error(why));
  auto enabled = resolve_enabled(f, registry);
  if (!enabled) return fail(usage_error(enabled.error().message));
  f.enabled = std::move(*enabled);
  for (const auto& [flag, value] : {std::pair{"--metrics-bind-address", &f.metrics_bind_address},
                                    std::pair{"--health-probe-bind-address", &f.health_probe_bind_address},
                                    std::pair{"--embedded-cluster", &f.embedded_cluster}}) {
    // "0" disables an endpoint; an empty --embedded-cluster picks a free local port.
    if (*value == "0" || value->empty()) continue;
    if (auto hp = parse_bind_address(flag, *value); !hp) return fail(usage_error(hp.error().message));
  }
  return f;
}

void log_configuration(const Flags& f) {
  spdlog::info("enabled frameworks: {}", fmt::join(f.enabled, ", "));
  spdlog::info("watching {}", f.namespaces.empty() ? std::string("all namespaces")
                                                   : fmt::format("namespace(s) {}", fmt::join(f.namespaces, ", ")));
  spdlog::debug("controller-threads={} leader-elect={} leader-election-id={} kube-api-qps={} kube-api-burst={} "
                "events-qps={} events-burst={} gang-scheduler-name=\"{}\" mpi-default-version={}",
                f.controller_threads, f.leader_elect, f.leader_election_id, f.kube_api_qps, f.kube_api_burst,
                f.events_qps, f.events_burst, f.gang_scheduler_name, f.mpi_default_version);
}

framework::EnablementOptions enablement_options(const Flags& f) {
  framework::EnablementOptions eo;
  eo.default_version["mpijob"] = f.mpi_default_version;
  return eo;
}

framework::PluginConfig plugin_config(const Flags& f, const framework::Registration& registration) {
  framework::PluginConfig pc;
  for (const auto& o : registration.options) pc.options[o.name] = f.framework_options.at(o.name);
  pc.gang_scheduler_name = f.gang_scheduler_name;
  pc.cluster_domain = f.cluster_domain;
  pc.service_name = f.webhook_service_name;
  pc.service_namespace = f.webhook_namespace;
  pc.certificate_secret = f.webhook_secret_name;
  return pc;
}

controller::JobControllerOptions controller_options(const Flags& f, const framework::Registry& registry,
                                                    const std::string& framework_name) {
  controller::JobControllerOptions jo;
  jo.namespaces = f.namespaces;
  jo.workers = f.controller_threads;
  jo.owns_unset_managed_by = registry.owns_unset_managed_by(framework_name, f.enabled, enablement_options(f));
  jo.pin_owner = registry.kind_shared(framework_name);
  return jo;
}

kube::RestConfig rest_options(const Flags& f, kube::RestConfig rest) {
  rest.qps = f.kube_api_qps;
  rest.burst = f.kube_api_burst;
  return rest;
}

kube::LeaderElectionConfig election_options(const Flags& f, const std::string& default_namespace,
                                            const std::string& identity) {
  kube::LeaderElectionConfig lc;
  lc.lease_namespace = f.leader_election_namespace.empty() ? default_namespace : f.leader_election_namespace;
  lc.lease_name = f.leader_election_id;
  lc.identity = identity;
  lc.lease_duration = *parse_duration(f.leader_elect_lease_duration);
  lc.renew_deadline = *parse_duration(f.leader_elect_renew_deadline);
  lc.retry_period = *parse_duration(f.leader_elect_retry_period);
  lc.on_new_leader = [](const std::string& who) { spdlog::info("leader is now {}", who); };
  return lc;
}

WebhookOptions webhook_options(const Flags& f, bool embedded) {
  WebhookOptions wo;
  wo.host = f.webhook_host;
  wo.port = static_cast<uint16_t>(f.webhook_server_port);
  const auto validity = *parse_duration(f.webhook_cert_validity);
  wo.certs.cert.service_name = f.webhook_service_name;
  wo.certs.cert.service_namespace = f.webhook_namespace;
  wo.certs.cert.validity = validity;
  wo.certs.secret_namespace = f.webhook_namespace;
  wo.certs.secret_name = f.webhook_secret_name;
  wo.certs.lookahead = webhook::default_lookahead(validity);
  wo.certs.validating_configurations = {std::string(webhook::kValidatingConfigurationName)};
  wo.certs.mutating_configurations = {std::string(webhook::kMutatingConfigurationName)};
  wo.handler.persist_defaults = f.webhook_persist_defaults;
  if (embedded) {
    // The local API server calls the operator on this host: a url, so no Service is needed.
    if (!f.webhook_host_given) wo.host = "127.0.0.1";
    if (!f.webhook_port_given) wo.port = 0;
    wo.certs.cert.ip_addresses = {"127.0.0.1"};
    wo.create_secret_namespace = true;
  }
  return wo;
}

manager::ManagerOptions manager_options(const Flags& f) {
  manager::ManagerOptions mo;
  mo.leader_election = f.leader_elect;
  // Kubernetes sends SIGKILL after the pod's terminationGracePeriodSeconds (40 s in
  // manifests/base); the stop normally takes well under a second.
  mo.graceful_shutdown_timeout = std::chrono::seconds(30);
  mo.observer = [](const manager::Transition& t) {
    using Kind = manager::Transition::Kind;
    if (!t.error.empty()) {
      spdlog::warn("stopping {}: {}", t.name, t.error);
    } else if (t.kind == Kind::Started && t.leadership == manager::Leadership::Needed) {
      spdlog::info("started {}", t.name);
    } else {
      spdlog::debug("{} {} in {} ms", t.kind == Kind::Started ? "started" : "stopped", t.name, t.took.count());
    }
  };
  return mo;
}

}  // namespace unitrain::operator_cmd
