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

  // Builds the plugin for an enabled framework; every declared option gets its default unless set.
  Result<std::unique_ptr<FrameworkPlugin>> instantiate(std::string_view name, PluginConfig config) const;

 private:
  Result<const Registration*> lookup(std::string_view spelling, const EnablementOptions& options) const;

  std::vector<Registration> registrations_;
};

}  // namespace unitrain::framework
