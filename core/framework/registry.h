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

struct Registration {
  FrameworkDescriptor descriptor;
  PluginFactory factory = nullptr;
  std::vector<OptionSpec> options;
};

// The Registration of a module whose plugin is `Plugin(descriptor, config)` over the descriptor
// `MakeDescriptor` builds: what most modules' register_<name>() returns.
template <class Plugin, FrameworkDescriptor (*MakeDescriptor)()>
Registration registration_of(std::vector<OptionSpec> options = {}) {
  Registration r;
  r.descriptor = MakeDescriptor();
  r.factory = [](const PluginConfig& config) -> std::unique_ptr<FrameworkPlugin> {
    return std::make_unique<Plugin>(MakeDescriptor(), config);
  };
  r.options = std::move(options);
  return r;
}

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
  ConvertFunction convert = nullptr;
};

struct EnablementOptions {
  // For a kind served by several modules, the version its bare name means, by lower-case kind:
  // {"mpijob": "v2beta1"} (the operator's --mpi-default-version).
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
  Result<std::vector<std::string>> resolve(const std::vector<std::string>& values,
                                           const EnablementOptions& options = {}) const;

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
  Result<std::unique_ptr<FrameworkPlugin>> instantiate(std::string_view name, PluginConfig config) const;

 private:
  Result<const Registration*> lookup(std::string_view spelling, const EnablementOptions& options) const;

  std::vector<Registration> registrations_;
  std::vector<ConversionRegistration> conversions_;
};

}  // namespace unitrain::framework
