// PyTorchJob hooks. Behaviour follows training-operator v1.8.1 (defaults, env, init container,
// services, HPA, status) and the v1.9 webhook (validation); see
// docs/compatibility.md for the upstream quirks this module keeps or fixes.
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/api/field_errors.h"
#include "core/framework/job_spec.h"
#include "core/framework/job_validation.h"
#include "core/framework/json_members.h"
#include "core/framework/module_plugin.h"
#include "core/framework/pod_decoration.h"
#include "core/framework/registry.h"
#include "core/framework/replica_defaults.h"
#include "core/framework/replica_status.h"
#include "core/json/json.h"
#include "frameworks/pytorch/register.h"

namespace unitrain::frameworks::pytorch {
namespace {

using api::FieldError;
using api::FieldPath;
using framework::DesiredObject;
using framework::Observed;
using framework::PodSlot;
using framework::StatusProposal;
using json::Document;
using json::Value;

constexpr std::string_view kKind = "PyTorchJob";
constexpr std::string_view kMaster = "Master";
constexpr std::string_view kWorker = "Worker";
constexpr std::string_view kContainer = "pytorch";
constexpr std::string_view kPortName = "pytorchjob-port";
constexpr int32_t kPort = 23456;
constexpr std::string_view kDefaultRestartPolicy = "OnFailure";

const kube::GroupVersionResource kHPAs{"autoscaling", "v2", "horizontalpodautoscalers"};
const framework::KubeflowV1Kind kPyTorch{.kind = std::string(kKind),
                                         .replica_specs_field = "pytorchReplicaSpecs",
                                         .replica_types = {"Master", "Worker"},
                                         .container = std::string(kContainer),
                                         .port_name = std::string(kPortName),
                                         .port = kPort,
                                         .restart_policy = std::string(kDefaultRestartPolicy),
                                         .framework = "pytorch",
                                         .owned_resources = {kHPAs}};

using framework::FrameworkDescriptor;
using framework::json_members::member;
using framework::named_port;
using framework::replica_spec;
using framework::replicas_of;
using framework::total_replicas;
using json::string_at;

bool has_master(const FrameworkDescriptor& d, const Value& job) { return replica_spec(d, job, kMaster) != nullptr; }

// "auto" and the device names count one process per node for WORLD_SIZE, as upstream does.
int32_t nproc_per_node_int(const Value& job) {
  auto s = json::get_string(job, "/spec/nprocPerNode");
  if (!s) return 1;
  int32_t n = 0;
  auto [ptr, ec] = std::from_chars(s->data(), s->data() + s->size(), n);
  if (ec != std::errc() || ptr != s->data() + s->size()) return 1;
  return n;
}

using framework::EnvVar;

std::string master_address(const Value& job) { return string_at(job, "/metadata/name") + "-master-0"; }

Result<std::vector<EnvVar>> env_for(const FrameworkDescriptor& d, const Value& job, const PodSlot& slot) {
  std::vector<EnvVar> env;
  env.push_back({"PYTHONUNBUFFERED", "1"});
  const std::string name = string_at(job, "/metadata/name");
  if (has_master(d, job)) {
    auto port = named_port(d, replica_spec(d, job, kMaster), kPortName);
    if (!port) return fail(fmt::format("PyTorchJob {}: spec.pytorchReplicaSpecs[Master]: container \"{}\" has no port named \"{}\"", name, kContainer, kPortName));
    env.push_back({"MASTER_PORT", std::to_string(*port)});
    env.push_back({"PET_MASTER_PORT", std::to_string(*port)});
    env.push_back({"MASTER_ADDR", master_address(job)});
    env.push_back({"PET_MASTER_ADDR", master_address(job)});
    int32_t rank = slot.index + (slot.replica_type == kWorker ? 1 : 0);
    env.push_back({"WORLD_SIZE", std::to_string(total_replicas(d, job) * nproc_per_node_int(job))});
    env.push_back({"RANK", std::to_string(rank)});
    env.push_back({"PET_NODE_RANK", std::to_string(rank)});
  }
  if (auto nproc = json::get_string(job, "/spec/nprocPerNode")) env.push_back({"PET_NPROC_PER_NODE", std::string(*nproc)});

  const Value* elastic = json::find(job, "/spec/elasticPolicy");
  if (elastic != nullptr && elastic->IsObject()) {
    const Value* worker = replica_spec(d, job, kWorker);
    std::string host = string_at(*elastic, "/rdzvHost");
    if (host.empty()) host = name + "-worker-0";
    std::optional<int64_t> port = json::get_int(*elastic, "/rdzvPort");
    if (!port) {
      auto wp = named_port(d, worker, kPortName);
      if (!wp) return fail(fmt::format("PyTorchJob {}: spec.pytorchReplicaSpecs[Worker]: container \"{}\" has no port named \"{}\" for the rendezvous endpoint", name, kContainer, kPortName));
      port = *wp;
    }
    env.push_back({"PET_RDZV_ENDPOINT", fmt::format("{}:{}", host, *port)});
    std::string backend = string_at(*elastic, "/rdzvBackend");
    env.push_back({"PET_RDZV_BACKEND", backend.empty() ? "c10d" : backend});
    auto min = json::get_int(*elastic, "/minReplicas");
    auto max = json::get_int(*elastic, "/maxReplicas");
    if (min || max) {
      env.push_back({"PET_NNODES", fmt::format("{}:{}", min.value_or(*max), max.value_or(*min))});
    } else {
      if (worker == nullptr) return fail(fmt::format("PyTorchJob {}: spec.pytorchReplicaSpecs[Worker] is required with an elastic policy", name));
      env.push_back({"PET_NNODES", std::to_string(replicas_of(worker))});
    }
    if (auto v = json::get_int(*elastic, "/maxRestarts")) env.push_back({"PET_MAX_RESTARTS", std::to_string(*v)});
    if (auto v = json::get_int(*elastic, "/nProcPerNode")) env.push_back({"PET_NPROC_PER_NODE", std::to_string(*v)});
    if (auto v = json::get_string(*elastic, "/rdzvId")) env.push_back({"PET_RDZV_ID", std::string(*v)});
    if (const Value* conf = member(elastic, "rdzvConf"); conf != nullptr && conf->IsArray()) {
      std::string joined;
      for (const auto& kv : conf->GetArray()) {
        if (!joined.empty()) joined += ',';
        joined += string_at(kv, "/key") + "=" + string_at(kv, "/value");
      }
      env.push_back({"PET_RDZV_CONF", joined});
    }
    if (json::get_bool(*elastic, "/standalone").value_or(false)) env.push_back({"PET_STANDALONE", ""});
  } else {
    env.push_back({"PET_NNODES", std::to_string(total_replicas(d, job))});
  }
  return env;
}

// The pod that carries `job-role: master`: every Master pod, else worker 0.
bool is_master_role(const FrameworkDescriptor& d, const Value& job, const PodSlot& slot) {
  if (has_master(d, job)) return slot.replica_type == kMaster;
  return slot.replica_type == kWorker && slot.index == 0;
}

Value init_container(const Value& job, const std::string& image, const std::string& max_tries, json::Allocator& a) {
  Value c(rapidjson::kObjectType);
  c.AddMember("name", "init-pytorch", a);
  c.AddMember("image", json::str(image, a), a);
  Value command(rapidjson::kArrayType);
  command.PushBack("sh", a);
  command.PushBack("-c", a);
  // Same loop as upstream's default template: bounded nslookup of the master's service name,
  // failing the init container when it never resolves.
  std::string script = fmt::format(
      "err=1;for i in $(seq {}); do if nslookup {}; then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err",
      max_tries, master_address(job));
  command.PushBack(json::str(script, a), a);
  c.AddMember("command", command, a);
  Value limits(rapidjson::kObjectType);
  limits.AddMember("cpu", "100m", a);
  limits.AddMember("memory", "20Mi", a);
  Value requests(rapidjson::kObjectType);
  requests.AddMember("cpu", "50m", a);
  requests.AddMember("memory", "10Mi", a);
  Value resources(rapidjson::kObjectType);
  resources.AddMember("limits", limits, a);
  resources.AddMember("requests", requests, a);
  c.AddMember("resources", resources, a);
  c.AddMember("imagePullPolicy", "IfNotPresent", a);
  return c;
}

// --pytorch-init-container-template-file: training-operator reads the file once and, when it is
// absent, uses its built-in template (init_container() above builds the same container). The
// file is a Go template of a YAML list of containers; its three fields are substituted here, and
// any other action is refused (by name) rather than passed on verbatim.
struct InitTemplate {
  std::string path;
  std::optional<std::string> text;  // nullopt: no such file, the built-in container
  std::string read_error;           // the file exists but cannot be read
};

InitTemplate load_init_template(const std::string& path) {
  InitTemplate t{path, std::nullopt, {}};
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return t;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    t.read_error = fmt::format("--pytorch-init-container-template-file {}: cannot be read", path);
    return t;
  }
  t.text = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return t;
}

Result<std::string> render_init_template(const InitTemplate& t, const std::string& master, const std::string& image,
                                         const std::string& max_tries) {
  const std::map<std::string, std::string, std::less<>> fields{
      {".MasterAddr", master}, {".InitContainerImage", image}, {".MaxTries", max_tries}};
  const std::string& text = *t.text;
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t open = text.find("{{", pos);
    if (open == std::string::npos) break;
    const size_t close = text.find("}}", open + 2);
    if (close == std::string::npos)
      return fail(fmt::format("--pytorch-init-container-template-file {}: unclosed action at offset {}", t.path, open));
    std::string_view action(text.data() + open + 2, close - open - 2);
    while (!action.empty() && (action.front() == ' ' || action.front() == '\t')) action.remove_prefix(1);
    while (!action.empty() && (action.back() == ' ' || action.back() == '\t')) action.remove_suffix(1);
    auto field = fields.find(action);
    if (field == fields.end())
      return fail(fmt::format("--pytorch-init-container-template-file {}: unsupported action {{{{{}}}}}; the fields are "
                              "{{{{.MasterAddr}}}}, {{{{.InitContainerImage}}}} and {{{{.MaxTries}}}}",
                              t.path, action));
    out.append(text, pos, open - pos);
    out += field->second;
    pos = close + 2;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

// The containers the template file renders to for `job`, in order.
Result<std::vector<Document>> templated_init_containers(const InitTemplate& t, const Value& job, const std::string& image,
                                                        const std::string& max_tries) {
  auto text = render_init_template(t, master_address(job), image, max_tries);
  if (!text) return fail(text.error());
  auto docs = json::parse_yaml(*text);
  if (!docs) return fail(fmt::format("--pytorch-init-container-template-file {}: {}", t.path, docs.error().message));
  std::vector<Document> out;
  for (const auto& doc : *docs) {
    if (!doc.root().IsArray())
      return fail(fmt::format("--pytorch-init-container-template-file {}: must be a YAML list of containers", t.path));
    for (const auto& c : doc.root().GetArray()) {
      if (!c.IsObject() || json::get_string(c, "/name").value_or("").empty())
        return fail(fmt::format("--pytorch-init-container-template-file {}: every list item must be a container with a name",
                                t.path));
      Document one = Document::object();
      one.root().CopyFrom(c, one.alloc());
      out.push_back(std::move(one));
    }
  }
  return out;
}

class PyTorchPlugin final : public framework::KubeflowV1Plugin {
 public:
  PyTorchPlugin(const framework::KubeflowV1Kind& kind, framework::PluginConfig config)
      : KubeflowV1Plugin(kind, std::move(config)),
        init_template_(load_init_template(config_.option("pytorch-init-container-template-file"))) {}

  void set_defaults(Document& job) const override {
    KubeflowV1Plugin::set_defaults(job);
    framework::set_elastic_replica_defaults(d_, job);
    const Value* elastic = json::find(job.root(), "/spec/elasticPolicy");
    const bool elastic_nproc = elastic != nullptr && elastic->IsObject() && member(elastic, "nProcPerNode") != nullptr &&
                               !member(elastic, "nProcPerNode")->IsNull();
    const Value* nproc = json::find(job.root(), "/spec/nprocPerNode");
    if ((nproc == nullptr || nproc->IsNull()) && !elastic_nproc) {
      (void)json::set_string(job, "/spec/nprocPerNode", "auto");
    }
  }

  framework::Validation validate(const Value* old_job, const Value& job) const override {
    framework::Validation out;
    auto& errs = out.errors;
    framework::validate_name(job, errs);
    framework::validate_managed_by(old_job, job, errs);
    const FieldPath specs_path = FieldPath("spec").child("pytorchReplicaSpecs");
    const Value* elastic = json::find(job, "/spec/elasticPolicy");
    if (elastic != nullptr && elastic->IsObject()) {
      if (replica_spec(d_, job, kWorker) == nullptr) {
        errs.push_back(FieldError::required(specs_path.key(kWorker), "must be configured if elastic policy is used"));
      }
      const Value* enp = member(elastic, "nProcPerNode");
      if (enp != nullptr && !enp->IsNull()) {
        out.warnings.push_back("spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead");
        const Value* np = json::find(job, "/spec/nprocPerNode");
        if (np != nullptr && !np->IsNull()) {
          errs.push_back(FieldError::forbidden(FieldPath("spec").child("elasticPolicy").child("nProcPerNode"),
                                               "must not be used with spec.nprocPerNode"));
        }
      }
    }
    framework::validate_replica_specs(d_, job, {}, errs);
    if (const Value* specs = json::find(job, "/spec/pytorchReplicaSpecs"); specs != nullptr && specs->IsObject()) {
      for (const auto& m : specs->GetObject()) {
        std::string rt(m.name.GetString(), m.name.GetStringLength());
        const Value* r = member(&m.value, "replicas");
        if (rt == kMaster) {
          if (r == nullptr || !r->IsInt() || r->GetInt() != 1) {
            errs.push_back(FieldError::forbidden(specs_path.key(rt).child("replicas"), "must be 1"));
          }
        } else if (r != nullptr && r->IsInt() && r->GetInt() < 1) {
          errs.push_back(FieldError::forbidden(specs_path.key(rt).child("replicas"), "must be at least 1"));
        }
      }
    }
    framework::validate_elastic_replicas(job, errs);
    framework::validate_common_spec(d_, job, errs);
    return out;
  }

  Status decorate_pod(const Value& job, const PodSlot& slot, Document& pod) const override {
    auto env = env_for(d_, job, slot);
    if (!env) return fail(env.error());
    if (auto s = framework::decorate_replica_pod(d_, pod, is_master_role(d_, job, slot), *env); !s) return s;
    if (slot.replica_type == kWorker && has_master(d_, job)) {
      if (!init_template_.read_error.empty()) return fail(init_template_.read_error);
      const std::string image = config_.option("pytorch-init-container-image");
      const std::string max_tries = config_.option("pytorch-init-container-max-tries");
      auto& a = pod.alloc();
      Value& inits = framework::json_members::ensure_array(framework::json_members::ensure_object(pod.root(), "spec", a),
                                                           "initContainers", a);
      if (!init_template_.text) {
        inits.PushBack(init_container(job, image, max_tries, a), a);
      } else {
        auto containers = templated_init_containers(init_template_, job, image, max_tries);
        if (!containers) return fail(containers.error());
        for (auto& c : *containers) inits.PushBack(Value(c.root(), a), a);
      }
    }
    return {};
  }

  Result<std::vector<DesiredObject>> desired_objects(const Value& job, const Observed& observed) const override {
    auto services = KubeflowV1Plugin::desired_objects(job, observed);
    if (!services) return fail(services.error());
    std::vector<DesiredObject> out = std::move(*services);
    const std::string name = string_at(job, "/metadata/name");
    const std::string ns = string_at(job, "/metadata/namespace");

    const Value* metrics = json::find(job, "/spec/elasticPolicy/metrics");
    const bool suspended = json::get_bool(job, "/spec/runPolicy/suspend").value_or(false);
    if (metrics != nullptr && !metrics->IsNull() && !suspended) {
      Document hpa = Document::object();
      auto& a = hpa.alloc();
      Value& root = hpa.root();
      root.AddMember("apiVersion", "autoscaling/v2", a);
      root.AddMember("kind", "HorizontalPodAutoscaler", a);
      Value meta(rapidjson::kObjectType);
      meta.AddMember("name", json::str(name, a), a);
      if (!ns.empty()) meta.AddMember("namespace", json::str(ns, a), a);
      root.AddMember("metadata", meta, a);
      Value spec(rapidjson::kObjectType);
      Value target(rapidjson::kObjectType);
      target.AddMember("kind", json::str(kKind, a), a);
      target.AddMember("name", json::str(name, a), a);
      target.AddMember("apiVersion", "kubeflow.org/v1", a);
      spec.AddMember("scaleTargetRef", target, a);
      if (const Value* min = json::find(job, "/spec/elasticPolicy/minReplicas")) spec.AddMember("minReplicas", Value(*min, a), a);
      if (const Value* max = json::find(job, "/spec/elasticPolicy/maxReplicas")) spec.AddMember("maxReplicas", Value(*max, a), a);
      spec.AddMember("metrics", Value(*metrics, a), a);
      root.AddMember("spec", spec, a);
      DesiredObject obj;
      obj.resource = kHPAs;
      obj.object = std::move(hpa);
      obj.update = DesiredObject::Update::WhenDiffers;
      obj.compared = {"/spec"};
      out.push_back(std::move(obj));
    }
    return out;
  }

  // The TTL deletion of the job is recorded with the pod reasons, as upstream's DeleteJob does.
  framework::CoreWording child_event(framework::ChildEvent e, const Value& job,
                                     const framework::ChildSubject& subject) const override {
    return framework::job_deletion_worded_as_pod(e, job, subject);
  }

  StatusProposal compute_status(const Value& job, const Observed& observed) const override {
    using Rules = framework::ReplicaStatusRules;
    const std::string name = string_at(job, "/metadata/name");
    const std::string ns = string_at(job, "/metadata/namespace");
    const bool master = has_master(d_, job);
    const Value* elastic_policy = json::find(job, "/spec/elasticPolicy");
    const bool elastic = elastic_policy != nullptr && elastic_policy->IsObject();
    Rules rules = framework::master_worker_status_rules(std::string(kKind), name, ns, master);
    rules.complete = [&](const framework::ReplicaState& s) {
      return s.expected() == 0 || (!master && elastic && s.counts.succeeded > 0);
    };
    return framework::replica_status_walk(d_, job, observed, rules);
  }

  std::vector<kube::GroupVersionResource> pruned_resources() const override { return {kHPAs}; }

 private:
  InitTemplate init_template_;
};

}  // namespace

Status register_pytorch(framework::Registry& registry) {
  auto r = framework::kubeflow_v1_registration<PyTorchPlugin>(
      kPyTorch,
      {{"pytorch-init-container-image", "alpine:3.10", "image of the init-pytorch container that waits for the master"},
       {"pytorch-init-container-max-tries", "100", "nslookup attempts (2 s apart) before init-pytorch gives up"},
       {"pytorch-init-container-template-file", "/etc/config/initContainer.yaml",
        "YAML list of init containers for workers, a Go template of {{.MasterAddr}}, {{.InitContainerImage}} and "
        "{{.MaxTries}}, read once at start; when the file does not exist, init-pytorch as above"}});
  r.permissions = {{{"autoscaling"}, {"horizontalpodautoscalers"}, {"get", "list", "watch", "create", "update", "delete"},
                    "Elastic PyTorchJobs with metrics get an HPA."}};
  return registry.add(std::move(r));
}

}  // namespace unitrain::frameworks::pytorch
