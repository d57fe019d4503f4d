// The operator's webhook endpoints, independent of HTTP and TLS: AdmissionReview v1 in, out for
// one validating and one defaulting (mutating) webhook per enabled framework, and ConversionReview
// v1 for every kind the registry has a conversion for. Frameworks are reached only through their
// plugin hooks (validate, set_defaults, capabilities) and descriptors.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/base64.h"
#include "core/framework/plugin.h"
#include "core/framework/registry.h"
#include "core/json/json.h"
#include "core/kube/client.h"

namespace unitrain::webhook {

struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

enum class WebhookType { Validating, Mutating };

// One admission webhook as it appears in a {Validating,Mutating}WebhookConfiguration.
struct Endpoint {
  WebhookType type = WebhookType::Validating;
  std::string path;  // "/validate-kubeflow-org-v1-pytorchjob", "/mutate-kubeflow-org-v2beta1-mpijob"
  std::string name;  // "validator.pytorchjob.training-operator.kubeflow.org"
  kube::GroupVersionResource resource;
  std::vector<std::string> operations;  // CREATE, UPDATE (and DELETE for a deprecated kind's warning)
  // Whether the configurations register it with the API server. Every endpoint is served; a
  // defaulting webhook is registered only where it changes something: a kind several enabled
  // modules serve (managedBy is filled in from the version written) or persisted defaults.
  bool registered = true;
};

inline constexpr std::string_view kConvertPath = "/convert";
inline constexpr std::string_view kValidatingConfigurationName = "validator.training-operator.kubeflow.org";
inline constexpr std::string_view kMutatingConfigurationName = "defaulter.training-operator.kubeflow.org";

struct HandlerOptions {
  // Write set_defaults into the object at admission. Off by default: the reference operators
  // never persist their defaults (they apply them in memory on every reconcile), and the
  // validating webhooks must see the raw spec to report the reference field errors.
  bool persist_defaults = false;
};

class Handler {
 public:
  // `plugins` are the enabled modules; they must outlive the handler. `registry` supplies the
  // conversions and the (kind, version) -> module mapping for kinds several modules serve.
  Handler(std::vector<const framework::FrameworkPlugin*> plugins, const framework::Registry& registry,
          HandlerOptions options = {});

  const std::vector<Endpoint>& endpoints() const { return endpoints_; }
  // CRDs ("<plural>.<group>") whose conversion /convert serves: those with a registered
  // conversion and at least one enabled module.
  std::vector<std::string> conversion_crds() const;

  // A POST to `path` carrying an AdmissionReview or ConversionReview. 404 for an unknown path.
  // A malformed review fails closed as core/webhook/review.h describes: an AdmissionReview that
  // refuses (allowed: false, 400 BadRequest status), a ConversionReview Failure, or an HTTP 400
  // for a conversion body with no request to answer.
  Reply handle(std::string_view path, std::string_view body) const;

  // The configurations that register endpoints() with an API server; `client_config` is the
  // admissionregistration.k8s.io/v1 WebhookClientConfig (url or service, caBundle).
  json::Document validating_configuration(const json::Value& client_config) const;
  json::Document mutating_configuration(const json::Value& client_config) const;

 private:
  struct Route {
    const Endpoint* endpoint;
    const framework::FrameworkPlugin* plugin;
    std::string fill_managed_by;  // set on create when unset ("" when the kind has one module)
    bool validates_defaulted;     // the plugin's PipelineDepartures
  };
  Reply admit(const Route& route, std::string_view body) const;
  Reply convert(std::string_view body) const;
  json::Document configuration(WebhookType type, const json::Value& client_config) const;

  std::vector<const framework::FrameworkPlugin*> plugins_;
  const framework::Registry& registry_;
  HandlerOptions options_;
  std::vector<Endpoint> endpoints_;
  std::vector<Route> routes_;
};

// RFC 6902 operations that turn `from` into `to`: add/remove/replace per object member, whole
// arrays replaced when they differ. Empty array when equal.
json::Document json_patch_diff(const json::Value& from, const json::Value& to);

// AdmissionResponse.patch, Secret data and caBundle are standard base64 (core/base/base64.h).
using unitrain::base64_encode;

}  // namespace unitrain::webhook
