#include "frameworks/trainer/trainjob_status.h"

#include <fmt/format.h>

#include "core/base/base64.h"
#include "core/framework/json_members.h"
#include "frameworks/trainer/json_edit.h"

namespace unitrain::frameworks::trainer {
namespace {
namespace jm = framework::json_members;
}  // namespace

std::string status_token_audience(std::string_view ns, std::string_view name) {
  return fmt::format("trainer.kubeflow.org/v1alpha1/namespaces/{}/trainjobs/{}/status", ns, name);
}

std::string status_path(std::string_view ns, std::string_view name) {
  return "/apis/" + status_token_audience(ns, name);
}

std::string status_server_url(const StatusServerConfig& config, std::string_view ns, std::string_view name) {
  return fmt::format("https://{}.{}.svc:{}{}", config.service_name, config.operator_namespace, config.port,
                     status_path(ns, name));
}

void enforce_trainjob_status(const StatusServerConfig& config, std::string_view ns, std::string_view name,
                             json::Value& pod_spec, json::Allocator& a) {
  if (json::Value* containers = jm::member(&pod_spec, "containers"); containers && containers->IsArray()) {
    for (auto& c : containers->GetArray()) {
      json::Value& env = jm::ensure_array(c, "env", a);
      upsert_by(env, "name", env_value("KUBEFLOW_TRAINER_SERVER_URL", status_server_url(config, ns, name), a), a);
      upsert_by(env, "name", env_value("KUBEFLOW_TRAINER_SERVER_CA_CERT", fmt::format("{}/ca.crt", kTrainerTokenDir), a), a);
      upsert_by(env, "name", env_value("KUBEFLOW_TRAINER_SERVER_TOKEN", fmt::format("{}/token", kTrainerTokenDir), a), a);
      json::Value mount(rapidjson::kObjectType);
      mount.AddMember("name", json::str(kTrainerTokenVolume, a), a);
      mount.AddMember("mountPath", json::str(kTrainerTokenDir, a), a);
      mount.AddMember("readOnly", true, a);
      upsert_by(jm::ensure_array(c, "volumeMounts", a), "mountPath", std::move(mount), a);
    }
  }
  json::Value token(rapidjson::kObjectType);
  token.AddMember("audience", json::str(status_token_audience(ns, name), a), a);
  token.AddMember("expirationSeconds", kTrainerTokenExpirationSeconds, a);
  token.AddMember("path", "token", a);
  json::Value token_source(rapidjson::kObjectType);
  token_source.AddMember("serviceAccountToken", std::move(token), a);

  json::Value item(rapidjson::kObjectType);
  item.AddMember("key", "ca.crt", a);
  item.AddMember("path", "ca.crt", a);
  json::Value items(rapidjson::kArrayType);
  items.PushBack(std::move(item), a);
  json::Value cm(rapidjson::kObjectType);
  cm.AddMember("name", json::str(std::string(name) + std::string(kTlsConfigSuffix), a), a);
  cm.AddMember("items", std::move(items), a);
  json::Value cm_source(rapidjson::kObjectType);
  cm_source.AddMember("configMap", std::move(cm), a);

  json::Value sources(rapidjson::kArrayType);
  sources.PushBack(std::move(token_source), a);
  sources.PushBack(std::move(cm_source), a);
  json::Value projected(rapidjson::kObjectType);
  projected.AddMember("sources", std::move(sources), a);
  json::Value volume(rapidjson::kObjectType);
  volume.AddMember("name", json::str(kTrainerTokenVolume, a), a);
  volume.AddMember("projected", std::move(projected), a);
  upsert_by(jm::ensure_array(pod_spec, "volumes", a), "name", std::move(volume), a);
}

Result<json::Document> status_tls_config_map(std::string_view ns, std::string_view name, const json::Value* secret,
                                             std::string_view secret_error) {
  if (secret == nullptr) return fail(fmt::format("failed to look up status server tls secret: {}", secret_error));
  std::string ca;
  if (auto encoded = json::get_string(*secret, "/data/ca.crt")) {
    auto decoded = base64_decode(*encoded);
    if (!decoded) return fail(fmt::format("status server tls secret ca.crt: {}", decoded.error().message));
    ca = std::move(*decoded);
  }
  if (ca.empty()) return fail("failed to find status server ca.crt in tls secret");
  json::Document d = new_object("v1", "ConfigMap", ns, std::string(name) + std::string(kTlsConfigSuffix));
  auto& a = d.alloc();
  json::Value data(rapidjson::kObjectType);
  data.AddMember("ca.crt", json::str(ca, a), a);
  d.root().AddMember("data", std::move(data), a);
  return d;
}

}  // namespace unitrain::frameworks::trainer
