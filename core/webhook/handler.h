// The operator's webhook endpoints, independent of HTTP and TLS: AdmissionReview v1 in, out for
// one validating and one defaulting (mutating) webhook per enabled framework, a validating one per
// companion kind a framework registers (framework::CompanionKind), and ConversionReview
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
  bool cluster_scoped = false;
  // Objects whose label `skip_label` has one of `skip_values` are not sent (objectSelector NotIn).
  std::string skip_label;
  std::vector<std::string> skip_values;
  // Whether the configurations register it with the API server. Every endpoint is served; a
  // defaulting webhook is registered only where it changes something: a kind several enabled
  // modules serve (managedBy is filled in from the version written) or persisted defaults.
  bool registered = true;
};

inline constexpr std::string_view kConvertPath = "/convert";
inline constexpr std::string_view kValidatingConfigurationName = "validator.training-operator.kubeflow.org";
inline constexpr std::string_view kMutatingConfigurationName = "defaulter.training-operator.kubeflow.org";
inline const kube::GroupVersionResource kValidatingConfigurations{"admissionregistration.k8s.io", "v1",
                                                                   "validatingwebhookconfigurations"};
inline const kube::GroupVersionResource kMutatingConfigurations{"admissionregistration.k8s.io", "v1",
                                                                 "mutatingwebhookconfigurations"};

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
  json::Document configuration_for(WebhookType type, const json::Value& client_config) const;
  // The configuration an install manifest carries: every served hook of `type`, those the operator
  // could do without too (it keeps the hooks it serves and adds the missing ones it needs).
  json::Document manifest_configuration(WebhookType type, const json::Value& client_config) const;
  // Whether the hook `name` (an endpoint's) must be registered for the operator to work: every
  // validating hook; a defaulting hook only where it fills managedBy (a kind several modules
  // serve), --webhook-persist-defaults writes defaults, or the module persists its own
  // (Registration::webhooks.mutate).
  bool registration_needed(std::string_view name) const;

 private:
  struct Route {
    const Endpoint* endpoint;
    const framework::FrameworkPlugin* plugin;
    std::string fill_managed_by;  // set on create when unset ("" when the kind has one module)
    const framework::CompanionKind* companion = nullptr;  // the hook of a companion kind of the plugin's
    bool denials_forbidden = false;                      // framework::WebhookNeeds::denials_forbidden
  };
  Reply admit(const Route& route, std::string_view body) const;
  Reply admit_companion(const Route& route, std::string_view body) const;
  json::Document configuration_of(WebhookType type, const json::Value& client_config, bool every_served) const;
  // Where several modules serve a kind, a job is checked and defaulted by the module that owns
  // it (its managedBy, else the owner annotation), whichever version it was written in: a job
  // of the v1 module edited through v2beta1 is converted to v1 and judged by the v1 module.
  // The route's module when the job names no owner, or one not enabled here.
  const framework::FrameworkPlugin* owner_of(const Route& route, const json::Value& object) const;
  // `object` in the version `plugin` serves, through the registry's conversion for its kind.
  Result<json::Document> in_version_of(const framework::FrameworkPlugin& plugin, const json::Value& object) const;
  // Whether `manager` is the managedBy value of another module registered for the route's kind
  // (enabled here or not): then it is no error of the route's module to see it.
  bool sibling_manager(const Route& route, std::string_view manager) const;
  // `kubectl apply` of a manifest in the route's version over a job of the same name that
  // belongs to the other version (its module, or what it was last applied as): the name is
  // taken, as the API server says of a create, rather than the manifest mixed into that job.
  bool applied_over_other_version(const Route& route, const json::Value& object, const json::Value& old_object) const;
  Reply convert(std::string_view body) const;

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
