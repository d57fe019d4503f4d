// The objects an MPIJob v2beta1 owns besides its worker pods, built as mpi-operator builds them:
// the headless Service, the hostfile ConfigMap, the SSH Secret and the launcher Job's pod
// template, with the volumes and env they share with the worker pods.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/result.h"
#include "core/framework/plugin.h"
#include "core/gang/gang.h"
#include "core/json/json.h"
#include "frameworks/mpi/v2/job_view.h"

namespace unitrain::frameworks::mpi::v2 {

// An env entry; an empty value is written as a bare name, as Go omits it.
json::Value env_var(std::string_view name, std::string_view value, json::Allocator& a);
// The `ssh-auth` volume of the job's SSH Secret.
json::Value ssh_volume(const JobView& j, json::Allocator& a);
// The `mpi-job-config` volume: hostfile and discover_hosts.sh of the job's ConfigMap.
json::Value config_volume(const JobView& j, json::Allocator& a);
// An object named `name` in the job's namespace, labelled app=<job> as mpi-operator labels them.
json::Document child(const JobView& j, std::string_view api_version, std::string_view kind, std::string_view name);

// The headless Service "<job>" selecting the job's pods.
json::Document service(const JobView& j);
// "<job>-config": the hostfile (every worker slot) and discover_hosts.sh (the Running workers).
json::Document config_map(const JobView& j, const std::string& cluster_domain, const framework::Observed& observed);
// "<job>-ssh" with a new key pair.
Result<json::Document> ssh_secret(const JobView& j);
// The launcher's env for the job's MPI implementation.
std::vector<std::pair<std::string, std::string>> launcher_env(const JobView& j);
// The pod restartPolicy of a replica spec's: ExitCode runs as Never.
std::string pod_restart_policy(const json::Value* spec);
// The launcher pod template, as mpi-operator builds it: a deep copy of the Launcher template
// plus the job labels, an owner reference, hostname and subdomain (so workers resolve it through
// the job's Service), the MPI implementation's env, and the SSH and config volumes.
// With `gang` set, the template also joins the job's PodGroup.
Result<json::Document> launcher_template(const JobView& j, const gang::Backend* gang);

}  // namespace unitrain::frameworks::mpi::v2
