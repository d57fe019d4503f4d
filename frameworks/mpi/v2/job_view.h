// An MPIJob v2beta1 as the module's hooks read it: the spec fields they decide on, and the children
// the core observed for it (the launcher batch/v1 Job and its pods, the worker pods).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/framework/plugin.h"
#include "core/json/json.h"

namespace unitrain::frameworks::mpi::v2 {

inline constexpr std::string_view kLauncher = "Launcher";
inline constexpr std::string_view kWorker = "Worker";
// mpi-operator's name, in the operator-name label of every pod it selects.
inline constexpr std::string_view kOperator = "mpi-operator";
inline constexpr std::string_view kDefaultSshPath = "/root/.ssh";
inline constexpr std::string_view kConfigMountPath = "/etc/mpi";

struct JobView {
  std::string name, ns, uid;
  int32_t slots = 1;
  bool launcher_as_worker = false;
  bool suspended = false;
  std::string implementation = "OpenMPI";
  std::string ssh_path = std::string(kDefaultSshPath);
  std::string creation_policy = "AtStartup";
  const json::Value* launcher = nullptr;
  const json::Value* worker = nullptr;
  int32_t workers = 0;
};


const json::Value* replica_spec(const json::Value& job, std::string_view rt);
JobView view(const json::Value& job);
// "<job>.<ns>.svc[.<cluster domain>]", the domain of the job's headless Service.
std::string service_domain(const JobView& j, const std::string& cluster_domain);

std::string label_of(const json::Value& obj, std::string_view key);
// The launcher batch/v1 Job among the observed children, or null.
const json::Value* launcher_job(const JobView& j, const framework::Observed& observed);
// The condition of `type` with status True in obj.status.conditions (a Job's, a pod's), or null.
const json::Value* condition(const json::Value* obj, std::string_view type);
bool job_complete(const json::Value* job);
bool job_failed(const json::Value* job);
bool pod_ready(const json::Value& pod);
// The job's worker pods, sorted by name.
std::vector<const json::Value*> worker_pods(const JobView& j, const framework::Observed& observed);
// Pods of the launcher Job: the core hands them over as owned["pods/jobs.batch"]; without that
// key, the job's own pod list is searched. Either way a pod counts when it is labelled launcher
// and, if the Job's uid is known, controlled by that Job.
std::vector<const json::Value*> launcher_pods(const JobView& j, const json::Value* launcher,
                                              const framework::Observed& observed);

}  // namespace unitrain::frameworks::mpi::v2
