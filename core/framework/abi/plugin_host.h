// The host side of the plugin ABI (core/framework/abi/unitrain_plugin.h): loads a framework
// module from a shared library and turns it into a framework::Registration whose plugins call
// the module through its tables. A registry cannot tell such a registration from a built-in one:
// --enable-scheme, the controllers, webhooks, metrics labels, CRD installation and the generated
// manifests all take it the same way.
//
// A plugin hook that cannot fail in the C++ contract (set_defaults, validate, pod_slots,
// compute_status, the gang minMember) throws ModuleError when the module reports an error, as a
// built-in module's hook would throw: the job controller retries the pass with backoff and logs
// it, the webhook refuses the review. Hooks with an error value (decorate_pod, desired_objects)
// return the module's message.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "core/framework/abi/unitrain_plugin.h"
#include "core/framework/registry.h"

namespace unitrain::framework::abi {

// A module's hook reported an error: "module /path/libx.so: validate: <the module's message>".
class ModuleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Loads the shared library at `path` (resolving all its symbols now, its symbols kept to itself),
// checks the ABI it was built for and reads its registration; origin is `path`. The library stays
// loaded while the registration's factory or a plugin it made exists. Errors name the file and the
// cause, e.g. "module /x/libjax.so was built for plugin ABI 2.0; this operator speaks 1.0".
Result<Registration> load_module(const std::string& path);

// The same for an entry point already in this process (a module linked into a test).
Result<Registration> registration_of_entry(unitrain_plugin_entry_fn entry, const std::string& origin);

// The modules of --framework-module-dir: the regular files named *.so in `dir`, sorted by name.
Result<std::vector<std::string>> module_files(const std::string& dir);

}  // namespace unitrain::framework::abi
