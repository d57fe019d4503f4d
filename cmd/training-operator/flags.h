// Every flag of build/bin/training-operator and the environment variables it reads, in one place:
// their definitions and checks (parse_flags) and what each means to the parts it configures (the
// *_options functions below). A new flag is a field here, a definition in parse_flags and a line
// in the function of the part it configures.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cmd/training-operator/logging.h"
#include "cmd/training-operator/webhooks.h"
#include "core/base/result.h"
#include "core/controller/job_controller.h"
#include "core/framework/plugin.h"
#include "core/framework/registry.h"
#include "core/kube/config.h"
#include "core/kube/leader_election.h"
#include "core/manager/manager.h"

namespace unitrain::operator_cmd {

struct Flags {
  std::vector<std::string> enable_scheme;
  std::vector<std::string> enabled;  // resolved from enable_scheme: canonical names, registration order
  std::string gang_scheduler_name;
  std::vector<std::string> namespaces;  // --namespace, else $KUBEFLOW_NAMESPACE
  std::string cluster_domain;           // --cluster-domain, else $CUSTOM_CLUSTER_DOMAIN
  int controller_threads = 1;
  bool leader_elect = false;
  std::string leader_election_id = "1ca428e5.training-operator.kubeflow.org";
  std::string leader_election_namespace;
  // Go durations (h, m or s), checked: lease > renew deadline > 1.2 * retry period.
  std::string leader_elect_lease_duration = "15s";
  std::string leader_elect_renew_deadline = "10s";
  std::string leader_elect_retry_period = "2s";
  std::string metrics_bind_address = ":8080";
  std::string health_probe_bind_address = ":8081";
  std::string kubeconfig;
  double kube_api_qps = 20;
  int kube_api_burst = 30;
  // Events have a client (and so a token bucket) of their own.
  double events_qps = 20;
  int events_burst = 30;
  // --zap-log-level, --zap-devel, --zap-encoder (--log-format), --zap-stacktrace-level,
  // --zap-time-encoding: what was given, and what it resolves to.
  LogFlags log_flags;
  LogOptions logging;
  std::string mpi_default_version = "v2beta1";
  bool embedded = false;         // --embedded-cluster given
  std::string embedded_cluster;  // its ADDR ("" picks a free local port)
  std::string crd_dir;
  std::string kubeconfig_out;
  std::map<std::string, std::string> framework_options;  // every module's OptionSpec, by name
  bool enable_webhooks = true;
  int webhook_server_port = 9443;
  bool webhook_port_given = false;  // --webhook-server-port or the port of --webhook-bind-address
  std::string webhook_host;         // --webhook-host or the host of --webhook-bind-address; "" every interface
  bool webhook_host_given = false;
  std::string webhook_bind_address;
  std::string webhook_service_name = "training-operator";
  std::string webhook_namespace = "kubeflow";  // --webhook-namespace, else $MY_POD_NAMESPACE
  std::string webhook_secret_name = "training-operator-webhook-cert";
  std::string webhook_cert_validity = "87600h";
  bool webhook_persist_defaults = false;
};

// Go durations as the flags take them: a positive number and a unit, h, m or s ("87600h", "90s").
std::optional<std::chrono::seconds> parse_duration(const std::string& value);

// Parses and checks the command line (and the environment variables above). The error is the exit
// status, its message already printed: 0 after --help or --version, 2 for a bad flag (the message names it).
Result<Flags, int> parse_flags(int argc, const char* const* argv, const framework::Registry& registry);

// Logs what the flags enable (info) and the rest of the configuration (debug).
void log_configuration(const Flags& flags);

// --- what the flags mean to each part ----------------------------------------------------------
framework::EnablementOptions enablement_options(const Flags& flags);
// The one configuration each enabled module's plugin is built with.
framework::PluginConfig plugin_config(const Flags& flags, const framework::Registration& registration);
controller::JobControllerOptions controller_options(const Flags& flags, const framework::Registry& registry,
                                                    const std::string& framework_name);
// The API clients' rate limits on top of `rest` (the kubeconfig's server and credentials).
kube::RestConfig rest_options(const Flags& flags, kube::RestConfig rest);
// on_new_leader logs; LeaseElection adds the leadership callbacks. `default_namespace` is the kubeconfig's (or the pod's) namespace.
kube::LeaderElectionConfig election_options(const Flags& flags, const std::string& default_namespace,
                                            const std::string& identity);
// `embedded`: the embedded cluster's API server calls the webhooks on 127.0.0.1.
WebhookOptions webhook_options(const Flags& flags, bool embedded);
manager::ManagerOptions manager_options(const Flags& flags);

}  // namespace unitrain::operator_cmd
