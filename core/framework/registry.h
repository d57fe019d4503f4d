// The framework registry: an object (not a global) that framework modules register into through
// one explicit call each (`register_pytorch(registry)`), and the `--enable-scheme` resolution over it.
// Tests build their own registries; the operator builds one from the list in cmd/.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/framework/descriptor.h"
#include "core/framework/plugin.h"

namespace unitrain::framework {

// One rule of the operator's ClusterRole (and namespaced Role) that a module needs beyond what
// the core asks for itself (its job kind, pods, Services, events, Leases, PodGroups,
// PriorityClasses): the objects it owns and anything its children are granted in turn.
struct Permission {
  std::vector<std::string> api_groups;  // {""} for the core group
  std::vector<std::string> resources;   // "configmaps", "pods/exec"
  std::vector<std::string> verbs;       // only those the module's requests use
  std::string why;                      // one line, printed above the rule in generated manifests
};

// The admission webhooks a module's kind needs. Its defaulting webhook is the core's business
// (registered where several modules serve one kind, or when defaults are persisted).
struct WebhookNeeds {
  // Operations the validating webhook covers (DELETE too for a deprecated kind's warning);
  // empty: none is registered.
  std::vector<std::string> validate = {"CREATE", "UPDATE"};
  // Operations a defaulting webhook that writes set_defaults() into the object covers, whatever
  // --persist-defaults says (JobSet's defaults are persisted on CREATE only); empty: the core's
  // rule (where several modules serve one kind, or when defaults are persisted).
  std::vector<std::string> mutate = {};
  // Denials are 403 Forbidden whose message is the aggregated field errors (controller-runtime's
  // answer to a validator that returns a plain error: Kubeflow Trainer's webhooks); otherwise
  // 422 Invalid, `<Kind>.<group> "<name>" is invalid: ...` (training-operator's). The kind's
  // companions' webhooks deny the same way.
  bool denials_forbidden = false;
};

// A kind the module's jobs read but the module does not run (a TrainJob's TrainingRuntime): the
// core serves its validating webhook through the plugin's CompanionValidator capability, and
// takes off its objects the finalizers an earlier release of the reference operator put there.
struct CompanionKind {
  kube::GroupVersionResource resource;
  std::string kind;
  bool cluster_scoped = false;
  // Operations the validating webhook covers; empty: none is registered.
  std::vector<std::string> validate;
  // Objects whose label `skip_label` has one of `skip_values` are not sent to the webhook (the
  // hook's objectSelector, operator NotIn); empty: every object is.
  std::string skip_label;
  std::vector<std::string> skip_values;
  // Finalizers nothing sets any more: the core removes them (a merge patch of
  // metadata.finalizers) from every object of the kind it sees with one, so such objects can go.
  std::vector<std::string> released_finalizers;
};

struct Registration {
  FrameworkDescriptor descriptor;
  PluginFactory factory;
  std::vector<OptionSpec> options;
  // CustomResourceDefinition YAML texts, the kind's own CRD (serving descriptor.version) first.
  // `--embedded-cluster` installs them and `training-operator manifests` prints them.
  std::vector<std::string> crds;
  std::vector<Permission> permissions;
  WebhookNeeds webhooks;
  std::vector<CompanionKind> companions;
  // Where the module comes from, for messages: "built in" or the shared library it was loaded from.
  std::string origin = "built in";
};

// The Registration of a module whose plugin is `Plugin(descriptor, config)`: what most modules'
// register_<name>() returns.
template <class Plugin>
Registration registration_of(FrameworkDescriptor descriptor, std::vector<OptionSpec> options = {}) {
  Registration r;
  r.descriptor = descriptor;
  r.factory = [descriptor = std::move(descriptor)](const PluginConfig& config) -> Result<std::unique_ptr<FrameworkPlugin>> {
    return std::unique_ptr<FrameworkPlugin>(std::make_unique<Plugin>(descriptor, config));
  };
  r.options = std::move(options);
  return r;
}

// A module's register function (`register_pytorch`): adds its one framework to a registry.
class Registry;
using RegisterFunction = Status (*)(Registry&);

// The registration `register_module` adds to a registry of its own, with `crds` (CRD YAML texts,
// the module's own CRD first) appended: how a module's generated code (the built-in list and a
// shared module's entry point, frameworks/CMakeLists.txt) turns its register function into a
// framework. Fails when registering fails or adds other than exactly one framework.
Result<Registration> module_registration(RegisterFunction register_module, const std::vector<std::string_view>& crds);

// Converts one object of a kind several API versions serve (a CRD with conversion strategy
// Webhook) to `to_api_version` ("group/version"). Pure; the error says why it cannot.
using ConvertFunction = Result<json::Document> (*)(const json::Value& object, std::string_view to_api_version);

// A kind served in several versions by one CRD, and how to convert between them. Registered
// separately from the frameworks: the conversion is needed whichever of the versions' modules run.
struct ConversionRegistration {
  std::string group;                  // "kubeflow.org"
  std::string kind;                   // the kind in every version
  std::string plural;                 // the CRD is "<plural>.<group>"
  std::vector<std::string> versions;  // the versions `convert` handles
  // The version stored when the CRD serves several ("v2beta1"); whichever modules are enabled,
  // it stays the same, so objects written before read back.
  std::string storage_version;
  ConvertFunction convert = nullptr;
};

struct EnablementOptions {
  // For a kind served by several modules, its default version, by lower-case kind:
  // {"mpijob": "v2beta1"} (the operator's --mpi-default-version): the one enabled when no
  // --enable-scheme is given, and the one that takes jobs without spec.runPolicy.managedBy.
  std::map<std::string, std::string, std::less<>> default_version;
};

class Registry {
 public:
  // Fails when the name, an alias or a (kind, version) pair is already taken, naming both owners.
  Status add(Registration registration);

  // By canonical name or alias, case-insensitively; null when unknown.
  const Registration* find(std::string_view name) const;
  // Registration order.
  const std::vector<Registration>& all() const { return registrations_; }
  // Every accepted spelling, sorted, for error messages and --help.
  std::vector<std::string> accepted_names() const;

  // Resolves `--enable-scheme` values (repeatable, each a comma list) into canonical names, in
  // registration order. Items: a name or alias, `*` (all), `-name` (remove). No values, or only
  // removals, start from all. Unknown names fail with the list of valid ones.
  // A kind served by several modules (MPIJob v1 and v2beta1) means, bare, the module whose
  // descriptor says kind_alias_default, whatever the default version: a flag value keeps the
  // meaning it has in the reference operator.
  Result<std::vector<std::string>> resolve(const std::vector<std::string>& values) const;

  // Fails when (group, kind) already has a conversion.
  Status add_conversion(ConversionRegistration registration);
  const ConversionRegistration* find_conversion(std::string_view group, std::string_view kind) const;
  const std::vector<ConversionRegistration>& conversions() const { return conversions_; }

  // Whether the enabled module `name` answers to a job whose spec.runPolicy.managedBy is unset:
  // yes when no other enabled module serves its kind; otherwise only the module of the kind's
  // default version (options.default_version, e.g. --mpi-default-version) does, so an unset
  // value never reaches two controllers.
  bool owns_unset_managed_by(std::string_view name, const std::vector<std::string>& enabled,
                             const EnablementOptions& options) const;
  // Whether another registered module (enabled or not) serves the kind of module `name`: then
  // which module takes a job without managedBy can change between runs, and the one that takes
  // it pins itself in the job (JobControllerOptions::pin_owner).
  bool kind_shared(std::string_view name) const;

  // Builds the plugin for an enabled framework; every declared option gets its default unless set.
  // Fails for a plugin whose descriptor leaves out pods (core_children) and that is no
  // WorkloadPlanner: the core's pod pipeline would create pods no cache watches.
  Result<std::unique_ptr<FrameworkPlugin>> instantiate(std::string_view name, PluginConfig config) const;

 private:
  Result<const Registration*> lookup(std::string_view spelling) const;

  std::vector<Registration> registrations_;
  std::vector<ConversionRegistration> conversions_;
};

}  // namespace unitrain::framework
