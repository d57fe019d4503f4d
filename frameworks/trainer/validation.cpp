#include "frameworks/trainer/validation.h"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "core/api/labels.h"
#include "core/framework/json_members.h"
#include "frameworks/trainer/build.h"
#include "frameworks/trainer/flux.h"
#include "frameworks/trainer/json_edit.h"
#include "frameworks/trainer/names.h"
#include "frameworks/trainer/runtime.h"

namespace unitrain::frameworks::trainer {
namespace {

namespace jm = framework::json_members;
using api::FieldError;
using api::FieldPath;
using api::FieldValue;
using json::string_at;

const json::Value* rjob_named(const json::Value& spec, std::string_view name) {
  const json::Value* rjobs = jm::member(&spec, "replicatedJobs");
  if (rjobs == nullptr || !rjobs->IsArray()) return nullptr;
  for (const auto& r : rjobs->GetArray()) if (string_at(r, "/name") == name) return &r;
  return nullptr;
}

bool has_container(const json::Value& rjob, std::string_view name) {
  return find_container(rjob, "containers", name) != nullptr || find_container(rjob, "initContainers", name) != nullptr;
}

// apimachinery's IsDomainPrefixedPath.
void domain_prefixed_path(const FieldPath& path, std::string_view value, api::FieldErrorList& errors) {
  if (value.empty()) {
    errors.push_back(FieldError::required(path));
    return;
  }
  auto slash = value.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == value.size()) {
    errors.push_back(FieldError::invalid(path, value, "must be a domain-prefixed path (such as \"acme.io/foo\")"));
    return;
  }
  const std::string_view host = value.substr(0, slash);
  for (auto& msg : api::validate_dns1123_subdomain(host)) errors.push_back(FieldError::invalid(path, host, msg));
  const std::string_view rest = value.substr(slash + 1);
  static const std::regex http_path(R"([A-Za-z0-9/\-._~%!$&'()*+,;=:]+)");
  if (!std::regex_match(rest.begin(), rest.end(), http_path)) {
    errors.push_back(FieldError::invalid(
        path, rest, "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"));
  }
}

void reserved_envs(const json::Value* env, const std::vector<std::string_view>& reserved, const FieldPath& path,
                   api::FieldErrorList& errors) {
  if (env == nullptr || !env->IsArray()) return;
  std::vector<std::string> found;
  for (const auto& e : env->GetArray()) {
    const std::string n = string_at(e, "/name");
    if (std::find(reserved.begin(), reserved.end(), n) != reserved.end()) found.push_back(n);
  }
  if (found.empty()) return;
  std::sort(found.begin(), found.end());
  std::string list;
  for (const auto& n : found) list += (list.empty() ? "" : " ") + n;
  errors.push_back(FieldError::invalid(path, FieldValue::of_json(*env),
                                       fmt::format("must not have reserved envs, invalid envs configured: [{}]", list)));
}

void initializer_checks(const json::Value& tj, const json::Value& spec, std::string_view field, std::string_view job,
                        std::string_view config, api::FieldErrorList& errors) {
  if (json::find(tj, fmt::format("/spec/initializer/{}", field)) == nullptr) return;
  const FieldPath path("spec.runtimeRef");
  const FieldValue value = FieldValue::of_json(*json::find(tj, "/spec/runtimeRef"));
  const json::Value* rjob = rjob_named(spec, job);
  if (rjob == nullptr) {
    errors.push_back(FieldError::invalid(path, value, fmt::format("must have {} job when trainJob is configured with input {}", job, config)));
    return;
  }
  const json::Value* c = find_container(*rjob, "containers", job);
  if (c == nullptr) c = find_container(*rjob, "initContainers", job);
  if (c == nullptr) {
    errors.push_back(FieldError::invalid(path, value, fmt::format("must have container with name - {} in the {} job", job, job)));
    return;
  }
  bool mounted = false;
  if (const json::Value* mounts = jm::member(c, "volumeMounts"); mounts && mounts->IsArray()) {
    for (const auto& m : mounts->GetArray()) if (string_at(m, "/name") == "initializer") mounted = true;
  }
  if (!mounted) {
    errors.push_back(FieldError::invalid(
        path, value, fmt::format("must have volumeMount with name - initializer in container {} of the {} job", job, job)));
  }
}

void runtime_patch_checks(const TrainJobAdmission& in, const json::Value& runtime_spec, api::FieldErrorList& errors) {
  const json::Value* patches = json::find(in.trainjob, "/spec/runtimePatches");
  const FieldPath path("spec.runtimePatches");
  if (patches != nullptr && patches->IsArray()) {
    for (const auto& p : patches->GetArray()) {
      domain_prefixed_path(path.child("manager"), string_at(p, "/manager"), errors);
      const json::Value* rjobs = json::find(p, "/trainingRuntimeSpec/template/spec/replicatedJobs");
      if (rjobs == nullptr || !rjobs->IsArray()) continue;
      for (const auto& r : rjobs->GetArray()) {
        const std::string name = string_at(r, "/name");
        const json::Value* runtime_rjob = rjob_named(runtime_spec, name);
        if (runtime_rjob == nullptr) {
          errors.push_back(FieldError::invalid(path, FieldValue::of_json(*patches),
                                               "must not have replicated job that doesn't exist in the runtime job template"));
          continue;
        }
        for (auto [list, what] : {std::pair{"initContainers", "initContainer"}, std::pair{"containers", "container"}}) {
          const json::Value* cs = json::find(r, std::string("/template/spec/template/spec/") + list);
          if (cs == nullptr || !cs->IsArray()) continue;
          for (const auto& c : cs->GetArray()) {
            const std::string cname = string_at(c, "/name");
            if (find_container(*runtime_rjob, list, cname) == nullptr) {
              errors.push_back(FieldError::invalid(path, FieldValue::of_json(*patches),
                                                   fmt::format("must not have {} that doesn't exist in the runtime job {}", what, name)));
            }
            if ((cname == kAncestorDataset || cname == kAncestorModel || cname == kNode) && jm::member(&c, "env") != nullptr) {
              errors.push_back(FieldError::invalid(path, FieldValue::of_json(*patches),
                                                   "must not have envs for the dataset-initializer, model-initializer, node containers"));
            }
          }
        }
      }
    }
  }
  // UPDATE: patches change only around a suspension, and never under an active Job.
  if (in.old_trainjob == nullptr) return;
  const json::Value* old_patches = json::find(*in.old_trainjob, "/spec/runtimePatches");
  const bool same = (old_patches == nullptr || (old_patches->IsArray() && old_patches->Empty()))
                        ? (patches == nullptr || (patches->IsArray() && patches->Empty()))
                        : (patches != nullptr && json::equal(*old_patches, *patches));
  if (same) return;
  const bool suspended = json::get_bool(*in.old_trainjob, "/spec/suspend").value_or(false) ||
                         json::get_bool(in.trainjob, "/spec/suspend").value_or(false);
  if (!suspended) {
    errors.push_back(FieldError::forbidden(path, "RuntimePatches can only be modified when the TrainJob is suspended before or after the update"));
    return;
  }
  if (!in.jobset_error.empty()) {
    errors.push_back(FieldError::internal(path, in.jobset_error));
    return;
  }
  if (in.jobset == nullptr) return;
  if (const json::Value* rjs = json::find(*in.jobset, "/status/replicatedJobsStatus"); rjs && rjs->IsArray()) {
    for (const auto& r : rjs->GetArray()) {
      if (json::get_int(r, "/active").value_or(0) > 0) {
        errors.push_back(FieldError::forbidden(
            path, fmt::format("RuntimePatches cannot be modified when the JobSet's ReplicatedJob {} is still active", string_at(r, "/name"))));
      }
    }
  }
}

void torchtune_checks(const json::Value& tj, const RuntimeInfo& info, api::FieldErrorList& errors) {
  const json::Value* trainer = json::find(tj, "/spec/trainer");
  const std::string model = torchtune_model(string_at(tj, "/spec/runtimeRef/name"));
  static const std::vector<std::string> models{"llama3_2/1B", "llama3_2/3B", "llama3_3/70B", "qwen2_5/1.5B"};
  if (std::find(models.begin(), models.end(), model) == models.end()) {
    errors.push_back(FieldError::invalid(FieldPath("spec.runtimeRef.name"), string_at(tj, "/spec/runtimeRef/name"),
                                         fmt::format("must have a supported pretrained model, invalid model configured: {}", model)));
    return;
  }
  int32_t nodes = 1;
  for (const auto& ps : info.pod_sets) if (ps.ancestor == kAncestorTrainer) nodes = ps.count;
  if (const json::Value* n = jm::member(trainer, "numNodes"); n && n->IsInt()) nodes = n->GetInt();
  if (nodes > 1 && model != "llama3_3/70B") {
    errors.push_back(FieldError::invalid(FieldPath("spec.trainer.numNodes"), nodes, fmt::format("must be 1 for {} model", model)));
  }
  json::Document resources = resources_per_node(tj, info);
  const std::string nproc = torch_nproc(tj, resources.root());
  const TorchtuneRecipe recipe = torchtune_recipe(jm::member(trainer, "args"), nodes, nproc, gpu_count(resources.root()));
  const std::string config = model + recipe.config_suffix;
  if (config.find("_qlora") != std::string::npos && model == "qwen2_5/1.5B") {
    errors.push_back(FieldError::invalid(FieldPath("spec.runtimeRef.name"), string_at(tj, "/spec/runtimeRef/name"),
                                         fmt::format("QLoRA is not supported for {} model", model)));
  }
  if (config.find("_qlora") != std::string::npos && config.find("_qlora_single_device") == std::string::npos &&
      model.rfind("llama3_2/", 0) == 0) {
    const json::Value* np = jm::member(trainer, "numProcPerNode");
    errors.push_back(FieldError::invalid(FieldPath("spec.trainer.numProcPerNode"), np ? FieldValue::of_json(*np) : FieldValue::null(),
                                         fmt::format("must be auto or 1 for {} model when using QLoRA", model)));
    const json::Value* rp = jm::member(trainer, "resourcesPerNode");
    errors.push_back(FieldError::invalid(FieldPath("spec.trainer.resourcesPerNode"), rp ? FieldValue::of_json(*rp) : FieldValue::null(),
                                         fmt::format("must have gpu resource with value 1 for {} model when using QLoRA", model)));
  }
  if (nodes > 1 && (recipe.lora || recipe.qlora)) {
    errors.push_back(FieldError::invalid(FieldPath("spec.trainer.numNodes"), nodes,
                                         "LoRA fine-tuning is not supported for multi-node training in TorchTune"));
  }
  if (const json::Value* args = jm::member(trainer, "args"); args && args->IsArray()) {
    static const std::vector<std::string> immutable{"output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file"};
    for (rapidjson::SizeType i = 0; i < args->Size(); ++i) {
      if (!(*args)[i].IsString()) continue;
      const std::string_view arg = json::view((*args)[i]);
      const std::string key(arg.substr(0, arg.find('=')));
      if (std::find(immutable.begin(), immutable.end(), key) != immutable.end()) {
        errors.push_back(FieldError::invalid(FieldPath("spec.trainer.args").index(i), arg,
                                             fmt::format("must not set immutable config \"{}\" in trainer args; it is managed by the runtime", key)));
      }
    }
  }
}

}  // namespace

WebhookVerdict validate_trainjob(const TrainJobAdmission& in) {
  WebhookVerdict out;
  const json::Value& tj = in.trainjob;
  const RuntimeRef ref = runtime_ref(tj);
  if (!supported(ref)) {
    out.denial = "unsupported runtime: " + gk_key(ref);
    return out;
  }
  if (in.runtime == nullptr) {
    const bool ns = namespaced(ref);
    out.errors.push_back(FieldError::invalid(
        FieldPath(ns ? "spec.runtimeRef" : "spec.RuntimeRef"), FieldValue::of_json(*json::find(tj, "/spec/runtimeRef")),
        fmt::format("{}: specified {} must be created before the TrainJob is created", in.runtime_error,
                    ns ? "trainingRuntime" : "clusterTrainingRuntime")));
    return out;
  }
  const json::Value& runtime = *in.runtime;
  if (!namespaced(ref) && string_at(runtime, "/metadata/labels/" + json::escape_pointer_token(kSupportLabel)) == kSupportDeprecated) {
    out.warnings.push_back(fmt::format(
        "Referenced ClusterTrainingRuntime \"{}\" is deprecated and will be removed in a future release of Kubeflow "
        "Trainer. See runtime deprecation policy: {}",
        ref.name, kDeprecationPolicyUrl));
  }
  auto info = runtime_info(tj, runtime);
  if (!info) {
    out.errors.push_back(FieldError::invalid(FieldPath("spec.runtimePatches"), FieldValue(), info.error().message));
    return out;
  }
  const json::Value& spec = info->jobset_spec.root();
  const json::Value* trainer = json::find(tj, "/spec/trainer");
  const json::Value& policy = info->ml_policy.root();

  // JobSet plugin.
  initializer_checks(tj, spec, "dataset", kAncestorDataset, "datasetConfig", out.errors);
  initializer_checks(tj, spec, "model", kAncestorModel, "modelConfig", out.errors);
  // Patches name what the runtime itself has, not what an earlier patch added.
  static const json::Value no_spec(rapidjson::kObjectType);
  const json::Value* raw_spec = json::find(runtime, "/spec/template/spec");
  runtime_patch_checks(in, raw_spec ? *raw_spec : no_spec, out.errors);

  // Torch.
  if (jm::member(&policy, "torch") != nullptr) {
    if (const json::Value* targets = json::find(policy, "/torch/envInjection/targets"); targets && targets->IsArray()) {
      for (const auto& t : targets->GetArray()) {
        const std::string job = string_at(t, "/jobName");
        for (const auto& cn : json::strings_at(t, "/containerNames")) {
          const json::Value* r = rjob_named(spec, job);
          if (r == nullptr || !has_container(*r, cn)) {
            out.errors.push_back(FieldError::invalid(
                FieldPath("spec.runtimeRef"), FieldValue::of_json(t),
                fmt::format("envInjection target podSet \"{}\" container \"{}\" not found in runtime template", job, cn)));
          }
        }
      }
    }
    reserved_envs(jm::member(trainer, "env"), {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"},
                  FieldPath("spec.trainer.env"), out.errors);
    const json::Value* cmd = jm::member(trainer, "command");
    if (cmd && cmd->IsArray() && cmd->Size() == 2 && json::strings_at(*cmd, "") == std::vector<std::string>{"tune", "run"}) {
      torchtune_checks(tj, *info, out.errors);
    }
  }
  // MPI.
  if (jm::member(&policy, "mpi") != nullptr) {
    const json::Value* n = jm::member(trainer, "numNodes");
    if (n && n->IsInt() && n->GetInt() >= 2 && json::get_bool(policy, "/mpi/runLauncherAsNode").value_or(false) &&
        (rjob_named(spec, kLauncher) == nullptr || rjob_named(spec, kNode) == nullptr)) {
      out.errors.push_back(FieldError::invalid(FieldPath("spec.trainer.numNodes"), n->GetInt(),
                                               "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does not have either launcher and node"));
    }
    reserved_envs(jm::member(trainer, "env"),
                  {"OMPI_MCA_orte_default_hostfile", "OMPI_MCA_plm_rsh_args", "OMPI_MCA_orte_keep_fqdn_hostnames", "OMPI_MCA_orte_set_default_slots"},
                  FieldPath("spec.trainer.env"), out.errors);
  }
  // XGBoost.
  if (jm::member(&policy, "xgboost") != nullptr) {
    if (const json::Value* env = jm::member(trainer, "env"); env && env->IsArray()) {
      for (rapidjson::SizeType i = 0; i < env->Size(); ++i) {
        const std::string n = string_at((*env)[i], "/name");
        if (n == "DMLC_TRACKER_URI" || n == "DMLC_TRACKER_PORT" || n == "DMLC_TASK_ID" || n == "DMLC_NUM_WORKER") {
          out.errors.push_back(FieldError::forbidden(FieldPath("spec.trainer.env").index(i), n + " is reserved for the XGBoost runtime"));
        }
      }
    }
  }
  // Flux: the tasks per broker are the TrainJob's numProcPerNode, else the policy's (default 1);
  // the installer init container is the plugin's to add.
  if (jm::member(&policy, "flux") != nullptr) {
    const json::Value* own = jm::member(trainer, "numProcPerNode");
    const int64_t tasks = own && own->IsInt() ? own->GetInt() : json::get_int(policy, "/flux/numProcPerNode").value_or(1);
    if (tasks < 1) {
      out.errors.push_back(FieldError::invalid(FieldPath("spec.trainer.numProcPerNode"), tasks,
                                               "must be greater than or equal to 1 for Flux TrainJob"));
    }
    if (const json::Value* node = rjob_named(spec, kNode);
        node != nullptr && find_container(*node, "initContainers", kFluxInstaller) != nullptr) {
      out.errors.push_back(FieldError::invalid(FieldPath("spec.trainer.initContainers"), std::string(kFluxInstaller),
                                               fmt::format("InitContainer '{}' is reserved", kFluxInstaller)));
    }
  }
  // Volcano.
  if (json::find(info->pod_group_policy.root(), "/volcano") != nullptr) {
    if (const json::Value* q = jm::member(&info->annotations.root(), kVolcanoQueueAnnotation); q && q->IsString() && q->GetStringLength() == 0) {
      out.errors.push_back(FieldError::invalid(FieldPath("spec.annotations").key(kVolcanoQueueAnnotation), "",
                                               "Volcano queue name must not be empty"));
    }
    if (const json::Value* rjobs = jm::member(&spec, "replicatedJobs"); rjobs && rjobs->IsArray() && in.priority_class_error) {
      for (const auto& r : rjobs->GetArray()) {
        const std::string pc = string_at(r, "/template/spec/template/spec/priorityClassName");
        if (pc.empty()) continue;
        if (pc == "system-cluster-critical" || pc == "system-node-critical") break;  // upstream stops here
        if (auto err = in.priority_class_error(pc)) {
          out.errors.push_back(FieldError::invalid(FieldPath("spec.templateSpec.priorityClassName"), pc,
                                                   fmt::format("PriorityClass \"{}\" doesn't exist: {}", pc, *err)));
        }
      }
    }
  }
  return out;
}

api::FieldErrorList validate_runtime_patch_managers(const json::Value& trainjob) {
  api::FieldErrorList errors;
  if (const json::Value* patches = json::find(trainjob, "/spec/runtimePatches"); patches && patches->IsArray()) {
    for (const auto& p : patches->GetArray()) {
      domain_prefixed_path(FieldPath("spec.runtimePatches.manager"), string_at(p, "/manager"), errors);
    }
  }
  return errors;
}

WebhookVerdict validate_runtime(const json::Value* old_runtime, const json::Value& runtime) {
  WebhookVerdict out;
  const bool cluster = string_at(runtime, "/kind") == kClusterTrainingRuntime;
  // An update that leaves the spec alone (labels, finalizers) is admitted as it is, so an object
  // stored before these rules applied can still be relabelled and released.
  if (old_runtime != nullptr) {
    const json::Value* spec = json::find(runtime, "/spec");
    const json::Value* old_spec = json::find(*old_runtime, "/spec");
    if ((spec == nullptr && old_spec == nullptr) || (spec != nullptr && old_spec != nullptr && json::equal(*spec, *old_spec)))
      return out;
  }
  if (const json::Value* rjobs = json::find(runtime, "/spec/template/spec/replicatedJobs"); rjobs && rjobs->IsArray()) {
    for (rapidjson::SizeType i = 0; i < rjobs->Size(); ++i) {
      const json::Value& r = (*rjobs)[i];
      const std::string ancestor = string_at(r, "/template/metadata/labels/" + json::escape_pointer_token(kAncestorLabel));
      std::string_view required;
      if (ancestor == kAncestorTrainer) required = kNode;
      else if (ancestor == kAncestorModel) required = kAncestorModel;
      else if (ancestor == kAncestorDataset) required = kAncestorDataset;
      else continue;
      const FieldPath path = FieldPath("spec.template.spec.replicatedJobs").index(i);
      if (const json::Value* rep = jm::member(&r, "replicas"); rep && rep->IsInt() && rep->GetInt() != 1) {
        out.errors.push_back(FieldError::invalid(path.child("replicas"), rep->GetInt(), "always must be 1"));
      }
      if (find_container(r, "containers", required) == nullptr) {
        const json::Value* cs = json::find(r, "/template/spec/template/spec/containers");
        out.errors.push_back(FieldError::invalid(path.child("template").child("spec").child("template").child("spec").child("containers"),
                                                 cs ? FieldValue::of_json(*cs) : FieldValue::null(),
                                                 fmt::format("must contain the required container for the ancestor: {}", ancestor)));
      }
    }
  }
  if (cluster && old_runtime == nullptr &&
      string_at(runtime, "/metadata/labels/" + json::escape_pointer_token(kSupportLabel)) == kSupportDeprecated) {
    out.warnings.push_back(fmt::format(
        "ClusterTrainingRuntime \"{}\" is deprecated and will be removed in a future release of Kubeflow Trainer. See "
        "runtime deprecation policy: {}",
        string_at(runtime, "/metadata/name"), kDeprecationPolicyUrl));
  }
  return out;
}

bool default_runtime_patch_times(const json::Value* old_trainjob, json::Document& trainjob, std::string_view now) {
  json::Value* patches = json::find(trainjob.root(), "/spec/runtimePatches");
  if (patches == nullptr || !patches->IsArray()) return false;
  const json::Value* old_patches = old_trainjob ? json::find(*old_trainjob, "/spec/runtimePatches") : nullptr;
  bool changed = false;
  auto& a = trainjob.alloc();
  for (auto& p : patches->GetArray()) {
    const json::Value* old = nullptr;
    if (old_patches != nullptr && old_patches->IsArray()) {
      for (const auto& o : old_patches->GetArray()) if (string_at(o, "/manager") == string_at(p, "/manager")) old = &o;
    }
    std::string wanted;
    if (old != nullptr) {
      json::Document a_copy = json::Document::copy_of(p), b_copy = json::Document::copy_of(*old);
      json::remove(a_copy, "/time");
      json::remove(b_copy, "/time");
      if (json::equal(a_copy.root(), b_copy.root())) wanted = string_at(*old, "/time");
      else wanted = std::string(now);
    } else {
      wanted = string_at(p, "/time");
      if (wanted.empty()) wanted = std::string(now);
    }
    if (wanted.empty() || string_at(p, "/time") == wanted) continue;
    jm::put(p, "time", wanted, a);
    changed = true;
  }
  return changed;
}

}  // namespace unitrain::frameworks::trainer
