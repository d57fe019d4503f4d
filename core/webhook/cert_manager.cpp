#include "core/webhook/cert_manager.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "core/kube/config.h"
#include "core/webhook/handler.h"

namespace unitrain::webhook {

namespace {

using json::Value;

const kube::GroupVersionResource kSecrets{"", "v1", "secrets"};
const kube::GroupVersionResource kCrds{"apiextensions.k8s.io", "v1", "customresourcedefinitions"};

constexpr std::array<std::string_view, 4> kKeys{"ca.crt", "ca.key", "tls.crt", "tls.key"};

std::optional<CertBundle> bundle_of(const Value& secret) {
  std::array<std::string, 4> pem;
  for (size_t i = 0; i < kKeys.size(); ++i) {
    auto b64 = json::get_string(secret, "/data/" + json::escape_pointer_token(kKeys[i]));
    if (!b64) return std::nullopt;
    auto decoded = kube::base64_decode(*b64);
    if (!decoded) return std::nullopt;
    pem[i] = std::move(*decoded);
  }
  return CertBundle{pem[0], pem[1], pem[2], pem[3]};
}

void put_bundle(json::Document& secret, const CertBundle& b) {
  auto& a = secret.alloc();
  Value data(rapidjson::kObjectType);
  const std::array<const std::string*, 4> pem{&b.ca_cert, &b.ca_key, &b.cert, &b.key};
  for (size_t i = 0; i < kKeys.size(); ++i)
    data.AddMember(json::str(kKeys[i], a), json::str(base64_encode(*pem[i]), a), a);
  secret.root().EraseMember("data");
  secret.root().EraseMember("stringData");
  secret.root().AddMember("data", data, a);
}

// Sets `bundle` at `pointer` when it differs; true when something changed.
bool set_bundle(json::Document& doc, const std::string& pointer, const std::string& bundle) {
  if (json::get_string(doc.root(), pointer) == std::string_view(bundle)) return false;
  return static_cast<bool>(json::set_string(doc, pointer, bundle));
}

}  // namespace

std::chrono::seconds default_lookahead(std::chrono::seconds validity) {
  return std::min<std::chrono::seconds>(validity / 4, std::chrono::hours(24 * 90));
}

CertManager::CertManager(kube::Client& client, CertManagerOptions options)
    : client_(client), options_(std::move(options)) {}

Result<CertBundle, CertFailure> CertManager::ensure(SystemTime now) {
  const auto& o = options_;
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto current = client_.get(kSecrets, o.secret_namespace, o.secret_name);
    if (!current && !current.error().is(kube::ApiError::Reason::NotFound))
      return fail(CertFailure{
          fmt::format("reading Secret {}/{}: {}", o.secret_namespace, o.secret_name, current.error().to_string())});
    if (current) {
      if (auto b = bundle_of(current->root()); b && check_certs(*b, o.cert, now, o.lookahead)) return *b;
    }
    auto fresh = generate_certs(o.cert, now);
    if (!fresh) return fail(CertFailure{std::move(fresh.error().message)});
    kube::ApiResult<json::Document> written = fail(kube::ApiError{});
    if (current) {
      json::Document secret = std::move(*current);
      put_bundle(secret, *fresh);
      written = client_.update(kSecrets, o.secret_namespace, secret.root());
    } else {
      json::Document secret = json::Document::object();
      auto& a = secret.alloc();
      secret.root().AddMember("apiVersion", "v1", a);
      secret.root().AddMember("kind", "Secret", a);
      Value meta(rapidjson::kObjectType);
      meta.AddMember("name", json::str(o.secret_name, a), a);
      meta.AddMember("namespace", json::str(o.secret_namespace, a), a);
      secret.root().AddMember("metadata", meta, a);
      secret.root().AddMember("type", "Opaque", a);
      put_bundle(secret, *fresh);
      written = client_.create(kSecrets, o.secret_namespace, secret.root());
    }
    if (!written) {
      // Another replica wrote first: serve what it wrote.
      if (written.error().is(kube::ApiError::Reason::Conflict) || written.error().is(kube::ApiError::Reason::AlreadyExists))
        continue;
      // A create answered 404 names the namespace: the Secret itself is what is being created.
      if (!current && written.error().is(kube::ApiError::Reason::NotFound))
        return fail(CertFailure{fmt::format("namespace \"{}\" for the Secret {} does not exist", o.secret_namespace,
                                            o.secret_name),
                                true});
      return fail(CertFailure{
          fmt::format("writing Secret {}/{}: {}", o.secret_namespace, o.secret_name, written.error().to_string())});
    }
    return *fresh;
  }
  return fail(CertFailure{fmt::format("Secret {}/{} kept changing while writing certificates", o.secret_namespace,
                                      o.secret_name)});
}

Status CertManager::inject_ca(const std::string& ca_cert) {
  const std::string bundle = base64_encode(ca_cert);
  auto update = [&](const kube::GroupVersionResource& r, const std::string& name,
                    auto&& apply) -> Status {
    for (int attempt = 0; attempt < 5; ++attempt) {
      auto obj = client_.get(r, "", name);
      if (!obj) {
        if (obj.error().is(kube::ApiError::Reason::NotFound)) return {};
        return fail(fmt::format("reading {} {}: {}", r.group_resource(), name, obj.error().to_string()));
      }
      if (!apply(*obj)) return {};
      auto written = client_.update(r, "", obj->root());
      if (written) return {};
      if (!written.error().is(kube::ApiError::Reason::Conflict))
        return fail(fmt::format("patching caBundle of {} {}: {}", r.group_resource(), name, written.error().to_string()));
    }
    return fail(fmt::format("{} {} kept changing while patching its caBundle", r.group_resource(), name));
  };
  auto webhooks = [&](json::Document& doc) {
    bool changed = false;
    if (Value* hooks = json::find(doc.root(), "/webhooks"); hooks != nullptr && hooks->IsArray())
      for (rapidjson::SizeType i = 0; i < hooks->Size(); ++i)
        changed |= set_bundle(doc, fmt::format("/webhooks/{}/clientConfig/caBundle", i), bundle);
    return changed;
  };
  auto crd = [&](json::Document& doc) {
    if (json::get_string(doc.root(), "/spec/conversion/strategy") != std::string_view("Webhook")) return false;
    return set_bundle(doc, "/spec/conversion/webhook/clientConfig/caBundle", bundle);
  };
  for (const auto& n : options_.validating_configurations)
    if (auto s = update(kValidatingConfigurations, n, webhooks); !s) return s;
  for (const auto& n : options_.mutating_configurations)
    if (auto s = update(kMutatingConfigurations, n, webhooks); !s) return s;
  for (const auto& n : options_.crds)
    if (auto s = update(kCrds, n, crd); !s) return s;
  return {};
}

}  // namespace unitrain::webhook
