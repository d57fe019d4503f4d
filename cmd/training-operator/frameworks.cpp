#include "cmd/training-operator/frameworks.h"

#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "core/framework/abi/plugin_host.h"
#include "frameworks/mpi/conversion/conversion.h"

namespace unitrain::operator_cmd {

Status register_frameworks(framework::Registry& registry) {
  if (auto s = register_builtin_frameworks(registry); !s) return s;
  // Served by /convert whenever an MPIJob module is enabled; the CRD uses it only when it serves
  // both versions.
  return frameworks::mpi::conversion::register_mpi_conversion(registry);
}

}  // namespace unitrain::operator_cmd

namespace unitrain::operator_cmd {

namespace {

// The value of `flag` at argv[i] ("--flag VALUE" or "--flag=VALUE"); nullopt when argv[i] is
// another argument. `i` moves past a separate value.
Result<std::optional<std::string>> flag_value(std::string_view flag, int argc, const char* const* argv, int& i) {
  const std::string_view arg = argv[i];
  if (arg == flag) {
    if (i + 1 >= argc) return fail(fmt::format("{} needs a value", flag));
    return std::optional<std::string>(argv[++i]);
  }
  if (arg.size() > flag.size() && arg.starts_with(flag) && arg[flag.size()] == '=')
    return std::optional<std::string>(std::string(arg.substr(flag.size() + 1)));
  return std::optional<std::string>();
}

}  // namespace

Result<std::vector<std::string>> module_paths(int argc, const char* const* argv) {
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") break;
    auto file = flag_value("--framework-module", argc, argv, i);
    if (!file) return fail(file.error());
    if (*file) {
      if (file->value().empty()) return fail("--framework-module: the path is empty");
      paths.push_back(std::move(file->value()));
      continue;
    }
    auto dir = flag_value("--framework-module-dir", argc, argv, i);
    if (!dir) return fail(dir.error());
    if (*dir) {
      auto files = framework::abi::module_files(dir->value());
      if (!files) return fail(fmt::format("--framework-module-dir: {}", files.error().message));
      paths.insert(paths.end(), files->begin(), files->end());
    }
  }
  return paths;
}

Status load_modules(const std::vector<std::string>& paths, framework::Registry& registry) {
  for (const auto& path : paths) {
    auto registration = framework::abi::load_module(path);
    if (!registration) return fail(registration.error());
    if (auto s = registry.add(std::move(*registration)); !s)
      return fail(fmt::format("module {}: {}", path, s.error().message));
  }
  return {};
}

}  // namespace unitrain::operator_cmd
