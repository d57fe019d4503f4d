// The module side of the plugin ABI (core/framework/abi/unitrain_plugin.h): the framework a
// module's register function adds to a Registry, served through the C tables. A module's whole
// entry point is one line, which the CMake function unitrain_add_plugin_module writes for it:
//
//   UNITRAIN_PLUGIN_MODULE(unitrain::frameworks::jax::register_jax, crd_yaml_text)
//
// Every exported function parses its request, calls the plugin's hook and writes the answer with
// wire.h; an exception never leaves it (it becomes UNITRAIN_ERROR and its message). Optional
// capabilities are exported where the plugin has them: wording and foreign_object_wording always
// (a plugin that keeps the defaults answers with training-operator's words, as the host would),
// gang_pod_group and gang_min_member, deprecation_warning and the PipelineDepartures answers when capabilities()
// offers them.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/framework/abi/unitrain_plugin.h"
#include "core/framework/registry.h"

namespace unitrain::framework::abi {

// The module table of the one framework `register_module` adds to a registry of its own, with
// `crds` (CRD YAML texts) appended to its registration. Built on the first call and kept while
// the library is loaded; later calls return the same table. When the registration fails (or adds
// no framework, or several), describe() reports why.
const unitrain_module_table* export_module(RegisterFunction register_module, std::vector<std::string_view> crds,
                                           uint32_t host_abi_major, const unitrain_host_table* host);

// A line through the operator's logger (0 debug, 1 info, 2 warning, 3 error) when the module was
// loaded by a host that offers one; otherwise nothing.
void host_log(int32_t level, std::string_view message);

}  // namespace unitrain::framework::abi

// Defines the module's entry point. `register_function` is `Status (framework::Registry&)`; the
// optional further arguments are the module's CRD YAML texts.
#define UNITRAIN_PLUGIN_MODULE(register_function, ...)                                                       \
  extern "C" UNITRAIN_PLUGIN_EXPORT const unitrain_module_table* unitrain_plugin_entry(                      \
      uint32_t host_abi_major, uint32_t host_abi_minor, const unitrain_host_table* host) {                   \
    (void)host_abi_minor;                                                                                    \
    return ::unitrain::framework::abi::export_module(&register_function, {__VA_ARGS__}, host_abi_major, host); \
  }
