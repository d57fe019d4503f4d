// Upstream's EnforceMLPolicy, EnforcePodGroupPolicy and ComponentBuilder plugins over the merged
// runtime, in one fixed order (build.h), and the JobSet they produce.
#include "frameworks/trainer/build.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/api/field_errors.h"
#include "core/api/quantity.h"
#include "core/base/base64.h"
#include "core/framework/ascii.h"
#include "core/framework/json_members.h"
#include "frameworks/trainer/flux.h"
#include "frameworks/trainer/json_edit.h"
#include "frameworks/trainer/names.h"

namespace unitrain::frameworks::trainer {
namespace {

namespace jm = framework::json_members;
using json::string_at;

// Everything the plugins share while one build runs.
struct Context {
  const json::Value& trainjob;
  RuntimeInfo info;
  json::Document resources{};  // per node, for process counts
  std::string name{}, ns{};
  const json::Value* trainer = nullptr;  // spec.trainer
  std::optional<std::vector<std::string>> command_override{};  // torchtune's and Flux's rewrites
  bool clear_args = false;                                       // Flux's rewrite
  std::vector<json::Document> objects{};

  json::Allocator& alloc() { return info.jobset_spec.alloc(); }
  json::Value* rjobs() {
    json::Value* r = jm::member(&info.jobset_spec.root(), "replicatedJobs");
    return r != nullptr && r->IsArray() ? r : nullptr;
  }
  // The replicated Job of PodSet i (same index).
  json::Value* rjob(size_t i) {
    json::Value* r = rjobs();
    return r != nullptr && i < r->Size() ? &(*r)[static_cast<rapidjson::SizeType>(i)] : nullptr;
  }
  std::optional<size_t> pod_set_named(std::string_view n) const {
    for (size_t i = 0; i < info.pod_sets.size(); ++i) if (info.pod_sets[i].name == n) return i;
    return std::nullopt;
  }
  std::optional<size_t> trainer_pod_set() const {
    for (size_t i = 0; i < info.pod_sets.size(); ++i) if (info.pod_sets[i].ancestor == kAncestorTrainer) return i;
    return std::nullopt;
  }
  // The `node` container of the trainer PodSet.
  json::Value* trainer_container() {
    auto i = trainer_pod_set();
    json::Value* r = i ? rjob(*i) : nullptr;
    return r ? find_container(*r, "containers", kNode) : nullptr;
  }
  const json::Value* trainer_field(std::string_view key) const { return jm::member(trainer, key); }
  std::string master_host() const { return name + "-node-0-0." + name; }
};

void add_port(json::Value& container, json::Allocator& a) {
  json::Value port(rapidjson::kObjectType);
  port.AddMember("containerPort", kContainerPort, a);
  json::Value& ports = jm::ensure_array(container, "ports", a);
  // Upserted when containerPort or name matches, as the builder copies PodSet ports.
  for (auto& p : ports.GetArray()) {
    if (json::get_int(p, "/containerPort") == kContainerPort) { p = std::move(port); return; }
  }
  ports.PushBack(std::move(port), a);
}

void apply_num_nodes(Context& c) {
  if (const json::Value* n = c.trainer_field("numNodes"); n && n->IsInt()) {
    if (auto i = c.trainer_pod_set()) c.info.pod_sets[*i].count = n->GetInt();
  }
}

bool has_policy(const Context& c, std::string_view source) {
  return jm::member(&c.info.ml_policy.root(), source) != nullptr;
}

// --- PlainML --------------------------------------------------------------------------------
void plain_ml(Context& c) {
  const bool runs = c.info.ml_policy.root().IsNull() ||
                    (!has_policy(c, "torch") && !has_policy(c, "mpi") && !has_policy(c, "jax"));
  if (!runs) return;
  apply_num_nodes(c);
  if (json::Value* node = c.trainer_container()) upsert_env(*node, c.trainer_field("env"), c.alloc());
}

// --- Torch (and torchtune) ------------------------------------------------------------------
bool is_tune_run(const json::Value* command) {
  return command != nullptr && command->IsArray() && command->Size() == 2 && (*command)[0].IsString() &&
         json::view((*command)[0]) == "tune" && (*command)[1].IsString() && json::view((*command)[1]) == "run";
}

std::string key_of(std::string_view arg) { return std::string(arg.substr(0, arg.find('='))); }

bool arg_flag_true(const json::Value* args, std::string_view key_part) {
  if (args == nullptr || !args->IsArray()) return false;
  for (const auto& a : args->GetArray()) {
    if (!a.IsString()) continue;
    std::string_view s = json::view(a);
    auto eq = s.find('=');
    if (eq == std::string_view::npos || s.substr(0, eq).find(key_part) == std::string_view::npos) continue;
    std::string v(s.substr(eq + 1));
    v.erase(0, v.find_first_not_of(" \t\n\r"));
    v.erase(v.find_last_not_of(" \t\n\r") + 1);
    if (framework::ascii::iequals(v, "true")) return true;
  }
  return false;
}

}  // namespace

std::string torchtune_model(std::string_view runtime_name) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    auto dash = runtime_name.find('-', start);
    parts.emplace_back(runtime_name.substr(start, dash == std::string_view::npos ? std::string_view::npos : dash - start));
    if (dash == std::string_view::npos) break;
    start = dash + 1;
  }
  if (parts.size() != 3) return "";
  std::string family = parts[1];
  std::replace(family.begin(), family.end(), '.', '_');
  std::string size = parts[2];
  for (char& ch : size) ch = static_cast<char>(ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch);
  return family + "/" + size;
}

TorchtuneRecipe torchtune_recipe(const json::Value* args, int32_t num_nodes, std::string_view nproc, int64_t gpus) {
  bool lora = false;
  if (args != nullptr && args->IsArray()) {
    for (const auto& a : args->GetArray()) {
      if (a.IsString() && json::view(a).find("model.lora_attn_modules") != std::string_view::npos) lora = true;
    }
  }
  const bool qlora = arg_flag_true(args, "model.quantize_base") && !arg_flag_true(args, "model.use_dora");
  if (num_nodes == 1 && (nproc == "1" || gpus == 1)) {
    if (qlora) return {"lora_finetune_single_device", "_qlora_single_device", lora, qlora};
    if (lora) return {"lora_finetune_single_device", "_lora_single_device", lora, qlora};
    return {"full_finetune_single_device", "_full_single_device", lora, qlora};
  }
  if (num_nodes == 1 && qlora) return {"lora_finetune_distributed", "_qlora", lora, qlora};
  if (num_nodes == 1 && lora) return {"lora_finetune_distributed", "_lora", lora, qlora};
  if (num_nodes > 1) return {"full_finetune_distributed", "_full_multinode", lora, qlora};
  return {"full_finetune_distributed", "_full", lora, qlora};
}

std::string torch_nproc(const json::Value& trainjob, const json::Value& resources) {
  if (const json::Value* n = json::find(trainjob, "/spec/trainer/numProcPerNode"); n && n->IsInt()) {
    return std::to_string(n->GetInt());
  }
  if (gpu_count(resources) == 0) return std::to_string(std::max<int64_t>(1, cpu_count(resources)));
  return "auto";
}

namespace {

Status torch(Context& c) {
  if (!has_policy(c, "torch")) return {};
  apply_num_nodes(c);
  const std::string nproc = torch_nproc(c.trainjob, c.resources.root());
  const auto trainer_set = c.trainer_pod_set();
  const int32_t nnodes = trainer_set ? c.info.pod_sets[*trainer_set].count : 1;
  auto& a = c.alloc();

  auto pet_env = [&](json::Value& container, bool with_master) {
    json::Value& env = jm::ensure_array(container, "env", a);
    upsert_by(env, "name", env_value("PET_NNODES", std::to_string(nnodes), a), a);
    upsert_by(env, "name", env_value("PET_NPROC_PER_NODE", nproc, a), a);
    upsert_by(env, "name", env_field_ref("PET_NODE_RANK", kCompletionIndexFieldPath, a), a);
    if (with_master) {
      upsert_by(env, "name", env_value("PET_MASTER_ADDR", c.master_host(), a), a);
      upsert_by(env, "name", env_value("PET_MASTER_PORT", std::to_string(kContainerPort), a), a);
    }
  };

  if (c.trainer != nullptr) {
    if (json::Value* node = c.trainer_container()) {
      upsert_env(*node, c.trainer_field("env"), a);
      const bool tune = is_tune_run(c.trainer_field("command"));
      pet_env(*node, !tune);
      if (tune) {
        const int64_t gpus = gpu_count(c.resources.root());
        const std::string model = torchtune_model(string_at(c.trainjob, "/spec/runtimeRef/name"));
        const TorchtuneRecipe recipe = torchtune_recipe(c.trainer_field("args"), nnodes, nproc, gpus);
        std::vector<std::string> cmd{"tune", "run"};
        bool nproc_int_above_one = nproc != "auto" && std::stoll(nproc) > 1;
        if (nnodes > 1 || nproc_int_above_one || (nproc == "auto" && gpus > 1)) {
          cmd.push_back(fmt::format("--rdzv_endpoint={}:{}", c.master_host(), kContainerPort));
        }
        cmd.push_back(recipe.recipe);
        cmd.emplace_back("--config");
        cmd.push_back(model + recipe.config_suffix);
        for (const auto& item : json::strings_at(*node, "/command")) {
          const std::string k = key_of(item);
          if (k == "output_dir" || k == "tokenizer.path" || k == "checkpointer.checkpoint_dir" || k == "tokenizer.merges_file") {
            cmd.push_back(item);
          }
        }
        c.command_override = std::move(cmd);
      }
      add_port(*node, a);
    }
  }

  // envInjection: the PET variables in other containers of named PodSets, master included.
  if (const json::Value* targets = json::find(c.info.ml_policy.root(), "/torch/envInjection/targets"); targets && targets->IsArray()) {
    for (const auto& t : targets->GetArray()) {
      const std::string job = string_at(t, "/jobName");
      for (const auto& cn : json::strings_at(t, "/containerNames")) {
        auto i = c.pod_set_named(job);
        json::Value* r = i ? c.rjob(*i) : nullptr;
        json::Value* target = r ? find_container(*r, "containers", cn) : nullptr;
        if (target == nullptr && r != nullptr) target = find_container(*r, "initContainers", cn);
        if (target == nullptr) {
          return fail(fmt::format("envInjection target podSet \"{}\" container \"{}\" not found in runtime template", job, cn));
        }
        pet_env(*target, true);
      }
    }
  }
  return {};
}

// --- MPI ------------------------------------------------------------------------------------
int32_t mpi_slots(const Context& c) {
  if (const json::Value* n = c.trainer_field("numProcPerNode"); n && n->IsInt()) return n->GetInt();
  const int64_t policy = json::get_int(c.info.ml_policy.root(), "/mpi/numProcPerNode").value_or(1);
  if (policy == 1 && gpu_count(c.resources.root()) > 1) return static_cast<int32_t>(gpu_count(c.resources.root()));
  return static_cast<int32_t>(policy);
}

json::Value key_to_path(std::string_view key, std::string_view path, int mode, json::Allocator& a) {
  json::Value item(rapidjson::kObjectType);
  item.AddMember("key", json::str(key, a), a);
  item.AddMember("path", json::str(path, a), a);
  item.AddMember("mode", mode, a);
  return item;
}

json::Value mount(std::string_view name, std::string_view path, json::Allocator& a) {
  json::Value m(rapidjson::kObjectType);
  m.AddMember("name", json::str(name, a), a);
  m.AddMember("mountPath", json::str(path, a), a);
  return m;
}

// Endpoints of PodSet i: <trainjob>-<rJob>-<r>-<p>.<subdomain>.
std::vector<std::string> endpoints(Context& c, size_t i) {
  std::string subdomain = string_at(c.info.jobset_spec.root(), "/network/subdomain");
  if (subdomain.empty()) subdomain = c.name;
  std::vector<std::string> out;
  const json::Value* r = c.rjob(i);
  const int64_t replicas = r ? json::get_int(*r, "/replicas").value_or(1) : 1;
  for (int64_t rep = 0; rep < replicas; ++rep) {
    for (int32_t p = 0; p < c.info.pod_sets[i].count; ++p) {
      out.push_back(fmt::format("{}-{}-{}-{}.{}", c.name, c.info.pod_sets[i].name, rep, p, subdomain));
    }
  }
  return out;
}

json::Document object_skeleton(std::string_view api_version, std::string_view kind, const Context& c, std::string_view name) {
  return new_object(api_version, kind, c.ns, name);
}

Status mpi(Context& c, const BuildInput& input) {
  if (!has_policy(c, "mpi")) return {};
  auto& a = c.alloc();
  const bool launcher_as_node = json::get_bool(c.info.ml_policy.root(), "/mpi/runLauncherAsNode").value_or(false);
  const auto node = c.pod_set_named(kNode);
  const auto launcher = c.pod_set_named(kLauncher);
  if (const json::Value* n = c.trainer_field("numNodes"); n && n->IsInt() && node) {
    c.info.pod_sets[*node].count = launcher_as_node ? std::max(n->GetInt() - 1, 1) : n->GetInt();
  }
  const int32_t slots = mpi_slots(c);
  const std::string ssh_path = [&] {
    auto p = json::get_string(c.info.ml_policy.root(), "/mpi/sshAuthMountPath");
    return p ? std::string(*p) : std::string("/root/.ssh");
  }();
  const std::string implementation = string_at(c.info.ml_policy.root(), "/mpi/mpiImplementation");

  for (auto which : {node, launcher}) {
    if (!which) continue;
    json::Value* r = c.rjob(*which);
    if (r == nullptr) continue;
    const bool is_launcher = which == launcher;
    json::Value& pod_spec = jm::ensure_object(pod_template(*r, a), "spec", a);
    json::Value& volumes = jm::ensure_array(pod_spec, "volumes", a);
    {
      json::Value items(rapidjson::kArrayType);
      items.PushBack(key_to_path("ssh-privatekey", "id_rsa", 0640, a), a);
      items.PushBack(key_to_path("ssh-publickey", "id_rsa.pub", 0644, a), a);
      items.PushBack(key_to_path("ssh-publickey", "authorized_keys", 0644, a), a);
      json::Value secret(rapidjson::kObjectType);
      secret.AddMember("secretName", json::str(c.name + "-mpi-ssh-auth", a), a);
      secret.AddMember("items", std::move(items), a);
      secret.AddMember("defaultMode", 0400, a);
      json::Value v(rapidjson::kObjectType);
      v.AddMember("name", "mpi-ssh-auth", a);
      v.AddMember("secret", std::move(secret), a);
      upsert_by(volumes, "name", std::move(v), a);
    }
    if (is_launcher) {
      json::Value items(rapidjson::kArrayType);
      items.PushBack(key_to_path("hostfile", "hostfile", 0444, a), a);
      json::Value cm(rapidjson::kObjectType);
      cm.AddMember("name", json::str(c.name + "-mpi-hostfile", a), a);
      cm.AddMember("items", std::move(items), a);
      json::Value v(rapidjson::kObjectType);
      v.AddMember("name", "mpi-hostfile", a);
      v.AddMember("configMap", std::move(cm), a);
      upsert_by(volumes, "name", std::move(v), a);
    }
    // Only containers named `node` receive the mounts and env.
    json::Value* container = find_container(*r, "containers", kNode);
    if (container == nullptr) continue;
    json::Value& mounts = jm::ensure_array(*container, "volumeMounts", a);
    upsert_by(mounts, "mountPath", mount("mpi-ssh-auth", ssh_path, a), a);
    if (!is_launcher) continue;
    upsert_by(mounts, "mountPath", mount("mpi-hostfile", "/etc/mpi", a), a);
    if (implementation != "OpenMPI") {
      return fail(fmt::format("MPI implementation for {} doesn't supported", api::go_quote(implementation)));
    }
    json::Value& env = jm::ensure_array(*container, "env", a);
    upsert_by(env, "name", env_value("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile", a), a);
    upsert_by(env, "name", env_value("OMPI_MCA_orte_keep_fqdn_hostnames", "true", a), a);
    upsert_by(env, "name", env_value("OMPI_MCA_orte_set_default_slots", std::to_string(slots), a), a);
    upsert_by(env, "name", env_value("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10", a), a);
  }

  // Objects: the SSH Secret once, the hostfile every pass.
  if (!input.ssh_secret_exists) {
    if (input.generate_ssh_keys == nullptr) return fail("MPI runtime: no SSH key generator");
    auto keys = input.generate_ssh_keys();
    if (!keys) return fail(keys.error().prefix("generating the MPI SSH key"));
    json::Document secret = object_skeleton("v1", "Secret", c, c.name + "-mpi-ssh-auth");
    auto& sa = secret.alloc();
    secret.root().AddMember("type", "kubernetes.io/ssh-auth", sa);
    secret.root().AddMember("immutable", true, sa);
    json::Value data(rapidjson::kObjectType);
    data.AddMember("ssh-privatekey", json::str(base64_encode(keys->private_key_pem), sa), sa);
    data.AddMember("ssh-publickey", json::str(base64_encode(keys->authorized_key), sa), sa);
    secret.root().AddMember("data", std::move(data), sa);
    c.objects.push_back(std::move(secret));
  }
  std::string hostfile;
  for (size_t i = 0; i < c.info.pod_sets.size(); ++i) {
    const auto& ps = c.info.pod_sets[i];
    if (ps.name != kNode && !(launcher_as_node && ps.name == kLauncher)) continue;
    for (const auto& e : endpoints(c, i)) hostfile += fmt::format("{} slots={}\n", e, slots);
  }
  json::Document cm = object_skeleton("v1", "ConfigMap", c, c.name + "-mpi-hostfile");
  json::Value data(rapidjson::kObjectType);
  data.AddMember("hostfile", json::str(hostfile, cm.alloc()), cm.alloc());
  cm.root().AddMember("data", std::move(data), cm.alloc());
  c.objects.push_back(std::move(cm));
  return {};
}

// --- JAX, XGBoost ---------------------------------------------------------------------------
void jax(Context& c) {
  if (!has_policy(c, "jax")) return;
  apply_num_nodes(c);
  if (c.trainer == nullptr) return;
  const auto t = c.trainer_pod_set();
  json::Value* node = c.trainer_container();
  if (!t || node == nullptr) return;
  auto& a = c.alloc();
  json::Value& env = jm::ensure_array(*node, "env", a);
  upsert_by(env, "name", env_value("JAX_NUM_PROCESSES", std::to_string(c.info.pod_sets[*t].count), a), a);
  upsert_by(env, "name", env_field_ref("JAX_PROCESS_ID", kCompletionIndexFieldPath, a), a);
  upsert_by(env, "name", env_value("JAX_COORDINATOR_ADDRESS", fmt::format("{}:{}", c.master_host(), kContainerPort), a), a);
  add_port(*node, a);
}

void xgboost(Context& c) {
  if (!has_policy(c, "xgboost")) return;
  const auto t = c.trainer_pod_set();
  if (!t) return;
  apply_num_nodes(c);
  if (c.trainer == nullptr) return;
  json::Value* node = c.trainer_container();
  if (node == nullptr) return;
  const int64_t gpus = gpu_count(c.resources.root());
  const int64_t workers = c.info.pod_sets[*t].count * (gpus > 0 ? gpus : 1);
  auto& a = c.alloc();
  json::Value& env = jm::ensure_array(*node, "env", a);
  upsert_by(env, "name", env_value("DMLC_TRACKER_URI", c.master_host(), a), a);
  upsert_by(env, "name", env_value("DMLC_TRACKER_PORT", std::to_string(kContainerPort), a), a);
  upsert_by(env, "name", env_field_ref("DMLC_TASK_ID", kCompletionIndexFieldPath, a), a);
  upsert_by(env, "name", env_value("DMLC_NUM_WORKER", std::to_string(workers), a), a);
  add_port(*node, a);
}

// --- Flux (flux.h), TrainJobStatus (trainjob_status.h) -------------------------------------
Status flux(Context& c) {
  if (!has_policy(c, "flux")) return {};
  const auto node = c.pod_set_named(kNode);
  json::Value* node_rjob = node ? c.rjob(*node) : nullptr;
  json::Value* container = c.trainer_container();
  if (node_rjob == nullptr || container == nullptr) {
    return fail("Flux runtime: needs a replicated Job \"node\" and a trainer container \"node\"");
  }
  auto& a = c.alloc();
  json::Value& pod_spec = jm::ensure_object(pod_template(*node_rjob, a), "spec", a);
  const std::string uid = string_at(c.trainjob, "/metadata/uid");
  const std::string subdomain = string_at(c.info.jobset_spec.root(), "/network/subdomain");
  const FluxTarget target{.trainjob = c.name,
                          .namespace_name = c.ns,
                          .uid = uid,
                          .subdomain = subdomain,
                          .trainer = c.trainer,
                          .ml_policy = &c.info.ml_policy.root(),
                          .gpus = gpu_count(c.resources.root())};
  auto edits = enforce_flux(target, pod_spec, *container, a);
  if (!edits) return fail(edits.error());
  c.command_override = std::move(edits->command);
  c.clear_args = true;
  for (auto& o : edits->objects) c.objects.push_back(std::move(o));
  return {};
}

void trainjob_status(Context& c, const BuildInput& input) {
  if (input.status_server == nullptr) return;
  const auto t = c.trainer_pod_set();
  json::Value* r = t ? c.rjob(*t) : nullptr;
  if (r == nullptr) return;
  auto& a = c.alloc();
  enforce_trainjob_status(*input.status_server, c.ns, c.name, jm::ensure_object(pod_template(*r, a), "spec", a), a);
}

// --- Pod groups -----------------------------------------------------------------------------
using ResourceSums = std::map<std::string, api::Quantity, std::less<>>;

// Kubernetes' PodRequests of a pod spec: container requests summed, init containers as the max,
// plus overhead. Limits do not count.
Result<ResourceSums> single_pod_requests(const json::Value& pod_spec) {
  ResourceSums sum, init_max;
  auto add_into = [](ResourceSums& into, const json::Value* requests, bool max) -> Status {
    if (requests == nullptr || !requests->IsObject()) return {};
    for (const auto& m : requests->GetObject()) {
      auto q = api::Quantity::from_json(m.value);
      if (!q) return fail(q.error());
      auto [it, inserted] = into.try_emplace(std::string(json::view(m.name)), *q);
      if (!inserted) it->second = max ? std::max(it->second, *q) : it->second + *q;
    }
    return {};
  };
  if (const json::Value* cs = jm::member(&pod_spec, "containers"); cs && cs->IsArray()) {
    for (const auto& ct : cs->GetArray()) {
      if (auto s = add_into(sum, json::find(ct, "/resources/requests"), false); !s) return fail(s.error());
    }
  }
  if (const json::Value* cs = jm::member(&pod_spec, "initContainers"); cs && cs->IsArray()) {
    for (const auto& ct : cs->GetArray()) {
      if (auto s = add_into(init_max, json::find(ct, "/resources/requests"), true); !s) return fail(s.error());
    }
  }
  for (const auto& [k, q] : init_max) {
    auto [it, inserted] = sum.try_emplace(k, q);
    if (!inserted) it->second = std::max(it->second, q);
  }
  if (auto s = add_into(sum, jm::member(&pod_spec, "overhead"), false); !s) return fail(s.error());
  return sum;
}

Status pod_groups(Context& c, const BuildInput& input) {
  const json::Value& policy = c.info.pod_group_policy.root();
  const bool coscheduling = jm::member(&policy, "coscheduling") != nullptr;
  const bool volcano = jm::member(&policy, "volcano") != nullptr;
  if (!coscheduling && !volcano) return {};
  auto& a = c.alloc();
  int32_t min_member = 0;
  ResourceSums min_resources;
  std::string priority_class;
  for (size_t i = 0; i < c.info.pod_sets.size(); ++i) {
    json::Value* r = c.rjob(i);
    if (r == nullptr) continue;
    json::Value& tmpl = pod_template(*r, a);
    json::Value& meta = jm::ensure_object(tmpl, "metadata", a);
    if (coscheduling) jm::put(jm::ensure_object(meta, "labels", a), kCoschedulingLabel, c.name, a);
    if (volcano) jm::put(jm::ensure_object(meta, "annotations", a), kVolcanoGroupAnnotation, c.name, a);
    const int32_t count = c.info.pod_sets[i].count;
    min_member += count;
    if (const json::Value* spec = jm::member(&tmpl, "spec")) {
      auto requests = single_pod_requests(*spec);
      if (!requests) return fail(requests.error().prefix(fmt::format("replicatedJob {} resources", c.info.pod_sets[i].name)));
      for (const auto& [k, q] : *requests) {
        auto [it, inserted] = min_resources.try_emplace(k, q * count);
        if (!inserted) it->second += q * count;
      }
      if (std::string pc = string_at(*spec, "/priorityClassName"); !pc.empty()) priority_class = pc;
    }
  }
  const bool suspended = json::get_bool(c.trainjob, "/spec/suspend").value_or(false);
  if (input.pod_group_exists && !suspended) return {};
  auto resources_json = [&](json::Allocator& pa) {
    json::Value out(rapidjson::kObjectType);
    for (const auto& [k, q] : min_resources) out.AddMember(json::str(k, pa), json::str(q.to_string(), pa), pa);
    return out;
  };
  if (coscheduling) {
    json::Document pg = object_skeleton("scheduling.x-k8s.io/v1alpha1", "PodGroup", c, c.name);
    auto& pa = pg.alloc();
    json::Value spec(rapidjson::kObjectType);
    spec.AddMember("minMember", min_member, pa);
    spec.AddMember("minResources", resources_json(pa), pa);
    spec.AddMember("scheduleTimeoutSeconds",
                   static_cast<int>(json::get_int(policy, "/coscheduling/scheduleTimeoutSeconds").value_or(60)), pa);
    pg.root().AddMember("spec", std::move(spec), pa);
    c.objects.push_back(std::move(pg));
  }
  if (volcano) {
    json::Document pg = object_skeleton("scheduling.volcano.sh/v1beta1", "PodGroup", c, c.name);
    auto& pa = pg.alloc();
    json::Value spec(rapidjson::kObjectType);
    spec.AddMember("minMember", min_member, pa);
    spec.AddMember("minResources", resources_json(pa), pa);
    if (const json::Value* q = jm::member(&c.info.annotations.root(), kVolcanoQueueAnnotation); q && q->IsString()) {
      spec.AddMember("queue", json::clone(*q, pa), pa);
    }
    if (!priority_class.empty()) spec.AddMember("priorityClassName", json::str(priority_class, pa), pa);
    if (const json::Value* nt = json::find(policy, "/volcano/networkTopology"); nt && nt->IsObject()) {
      json::Value topo(rapidjson::kObjectType);
      topo.AddMember("mode", json::str(string_at(*nt, "/mode").empty() ? "hard" : string_at(*nt, "/mode"), pa), pa);
      topo.AddMember("highestTierAllowed", static_cast<int>(json::get_int(*nt, "/highestTierAllowed").value_or(1)), pa);
      spec.AddMember("networkTopology", std::move(topo), pa);
    }
    pg.root().AddMember("spec", std::move(spec), pa);
    c.objects.push_back(std::move(pg));
  }
  return {};
}

// --- The JobSet builder ---------------------------------------------------------------------
void set_if_absent(json::Value& obj, std::string_view key, json::Value v, json::Allocator& a) {
  if (jm::member(&obj, key) == nullptr) jm::put(obj, key, std::move(v), a);
}

void initializer(Context& c, json::Value& rjob, std::string_view ancestor, std::string_view field) {
  auto& a = c.alloc();
  jm::put(rjob, "replicas", json::Value(1), a);
  const json::Value* source = json::find(c.trainjob, fmt::format("/spec/initializer/{}", field));
  if (source == nullptr || source->IsNull()) return;
  json::Value* container = find_container(rjob, "containers", ancestor);
  if (container == nullptr) return;
  json::Value& env = jm::ensure_array(*container, "env", a);
  if (auto uri = json::get_string(*source, "/storageUri")) upsert_by(env, "name", env_value("STORAGE_URI", *uri, a), a);
  upsert_env(*container, jm::member(source, "env"), a);
  if (auto secret = json::get_string(*source, "/secretRef/name")) {
    json::Value ref(rapidjson::kObjectType);
    ref.AddMember("name", json::str(*secret, a), a);
    json::Value from(rapidjson::kObjectType);
    from.AddMember("secretRef", std::move(ref), a);
    jm::ensure_array(*container, "envFrom", a).PushBack(std::move(from), a);
  }
}

json::Value string_list(const std::vector<std::string>& items, json::Allocator& a) {
  json::Value out(rapidjson::kArrayType);
  for (const auto& s : items) out.PushBack(json::str(s, a), a);
  return out;
}

void jobset_builder(Context& c) {
  auto& a = c.alloc();
  json::Value* rjobs = c.rjobs();
  if (rjobs == nullptr) return;
  const bool launcher_as_node = json::get_bool(c.info.ml_policy.root(), "/mpi/runLauncherAsNode").value_or(false);
  for (size_t i = 0; i < c.info.pod_sets.size() && i < rjobs->Size(); ++i) {
    json::Value& rjob = (*rjobs)[static_cast<rapidjson::SizeType>(i)];
    const PodSet& ps = c.info.pod_sets[i];
    // SyncParallelCount.
    json::Value& job_spec = jm::ensure_object(jm::ensure_object(rjob, "template", a), "spec", a);
    jm::put(job_spec, "parallelism", json::Value(ps.count), a);
    jm::put(job_spec, "completions", json::Value(ps.count), a);

    if (ps.ancestor == kAncestorDataset) initializer(c, rjob, kAncestorDataset, "dataset");
    if (ps.ancestor == kAncestorModel) initializer(c, rjob, kAncestorModel, "model");
    if (ps.ancestor == kAncestorTrainer) {
      jm::put(rjob, "replicas", json::Value(1), a);
      if (json::Value* node = find_container(rjob, "containers", kNode); node && c.trainer) {
        if (const json::Value* image = c.trainer_field("image"); image && image->IsString()) jm::put(*node, "image", json::clone(*image, a), a);
        if (const json::Value* cmd = c.trainer_field("command"); cmd && cmd->IsArray()) jm::put(*node, "command", json::clone(*cmd, a), a);
        if (const json::Value* args = c.trainer_field("args"); args && args->IsArray()) jm::put(*node, "args", json::clone(*args, a), a);
      }
      if (json::Value* node = find_container(rjob, "containers", kNode); node && c.command_override) {
        jm::put(*node, "command", string_list(*c.command_override, a), a);
        if (c.clear_args) node->RemoveMember("args");
      }
    }
    if (ps.ancestor == kAncestorTrainer || (launcher_as_node && ps.name == kNode)) {
      if (json::Value* node = find_container(rjob, "containers", kNode)) upsert_env(*node, c.trainer_field("env"), a);
    }

    // JobSet's webhook defaults, written here so the result does not depend on it.
    set_if_absent(job_spec, "completionMode", json::str("Indexed", a), a);
    json::Value& pod_spec = jm::ensure_object(pod_template(rjob, a), "spec", a);
    set_if_absent(pod_spec, "restartPolicy", json::str("OnFailure", a), a);
  }
  json::Value& spec = c.info.jobset_spec.root();
  json::Value& network = jm::ensure_object(spec, "network", a);
  set_if_absent(network, "enableDNSHostnames", json::Value(true), a);
  set_if_absent(network, "publishNotReadyAddresses", json::Value(true), a);
  if (jm::member(&spec, "successPolicy") == nullptr) {
    json::Value sp(rapidjson::kObjectType);
    sp.AddMember("operator", "All", a);
    jm::put(spec, "successPolicy", std::move(sp), a);
  }
  if (jm::member(&spec, "startupPolicy") == nullptr) {
    json::Value sp(rapidjson::kObjectType);
    sp.AddMember("startupPolicyOrder", "AnyOrder", a);
    jm::put(spec, "startupPolicy", std::move(sp), a);
  }
  jm::put(spec, "suspend", json::Value(json::get_bool(c.trainjob, "/spec/suspend").value_or(false)), a);
}

}  // namespace

Result<Built> build(const json::Value& trainjob, const json::Value& runtime, const BuildInput& input) {
  auto info = runtime_info(trainjob, runtime);
  if (!info) return fail(info.error());
  Context c{.trainjob = trainjob, .info = std::move(*info)};
  c.resources = resources_per_node(trainjob, c.info);
  c.name = string_at(trainjob, "/metadata/name");
  c.ns = string_at(trainjob, "/metadata/namespace");
  c.trainer = json::find(trainjob, "/spec/trainer");
  if (c.trainer != nullptr && !c.trainer->IsObject()) c.trainer = nullptr;

  plain_ml(c);
  if (auto s = torch(c); !s) return fail(s.error());
  if (auto s = mpi(c, input); !s) return fail(s.error());
  jax(c);
  xgboost(c);
  if (auto s = flux(c); !s) return fail(s.error());
  trainjob_status(c, input);
  if (auto s = pod_groups(c, input); !s) return fail(s.error());
  jobset_builder(c);
  if (input.status_server != nullptr) {
    auto cm = status_tls_config_map(c.ns, c.name, input.status_tls_secret, input.status_tls_secret_error);
    if (!cm) return fail(cm.error());
    c.objects.push_back(std::move(*cm));
  }

  Built out;
  // The JobSet is never updated while both it and the TrainJob run.
  const bool skip = input.existing_jobset != nullptr &&
                    !json::get_bool(trainjob, "/spec/suspend").value_or(false) &&
                    !json::get_bool(*input.existing_jobset, "/spec/suspend").value_or(false);
  if (!skip) {
    json::Document js = object_skeleton(kJobSetApiVersion, "JobSet", c, c.name);
    auto& a = js.alloc();
    json::Value& meta = js.root()["metadata"];
    if (c.info.labels.root().MemberCount() > 0) meta.AddMember("labels", json::clone(c.info.labels.root(), a), a);
    if (c.info.annotations.root().MemberCount() > 0) meta.AddMember("annotations", json::clone(c.info.annotations.root(), a), a);
    js.root().AddMember("spec", json::clone(c.info.jobset_spec.root(), a), a);
    out.jobset = std::move(js);
  }
  // JobSet first, then the builders' objects (MPI, Flux, the pod groups, TrainJobStatus).
  out.objects = std::move(c.objects);
  return out;
}

}  // namespace unitrain::frameworks::trainer
