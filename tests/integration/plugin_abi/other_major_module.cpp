// A module built for the plugin ABI major version after the host's: what a module compiled
// against a future (incompatible) SDK looks like to this operator. Its table says so and holds
// nothing the host may call; the host must refuse it before reading anything else.
#include "core/framework/abi/unitrain_plugin.h"

namespace {

unitrain_module_table future_table() {
  unitrain_module_table t{};
  t.struct_size = sizeof(unitrain_module_table);
  t.abi_major = UNITRAIN_PLUGIN_ABI_MAJOR + 1;
  t.abi_minor = 0;
  return t;
}

const unitrain_module_table kTable = future_table();

}  // namespace

extern "C" UNITRAIN_PLUGIN_EXPORT const unitrain_module_table* unitrain_plugin_entry(uint32_t, uint32_t,
                                                                                   const unitrain_host_table*) {
  return &kTable;
}
