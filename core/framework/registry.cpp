#include "core/framework/registry.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/framework/ascii.h"

namespace unitrain::framework {

namespace {

using ascii::lower;

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

// Spellings that name exactly this registration (the bare kind is handled separately, since
// two modules may share it).
std::vector<std::string> own_spellings(const FrameworkDescriptor& d) {
  std::vector<std::string> out{lower(d.name)};
  for (const auto& a : d.aliases) out.push_back(lower(a));
  return out;
}

}  // namespace

Status Registry::add(Registration registration) {
  const auto& d = registration.descriptor;
  const std::string& origin = registration.origin;
  if (d.name.empty() || d.kind.empty() || d.group.empty() || d.version.empty() || d.plural.empty())
    return fail(fmt::format("framework registration \"{}\" ({}): name, group, version, kind and plural are required",
                            d.name, origin));
  if (!registration.factory) return fail(fmt::format("framework \"{}\" ({}): no plugin factory", d.name, origin));
  for (const auto& spelling : own_spellings(d)) {
    if (spelling.empty() || spelling == "*" || spelling.starts_with("-"))
      return fail(fmt::format("framework \"{}\" ({}): \"{}\" cannot be a name", d.name, origin, spelling));
    for (const auto& other : registrations_) {
      const auto taken = own_spellings(other.descriptor);
      if (std::find(taken.begin(), taken.end(), spelling) != taken.end() ||
          (spelling == lower(other.descriptor.kind) && d.kind != other.descriptor.kind))
        return fail(fmt::format("framework \"{}\" ({}): name \"{}\" is already taken by \"{}\" ({})", d.name, origin,
                                spelling, other.descriptor.name, other.origin));
    }
  }
  for (const auto& other : registrations_) {
    const auto& o = other.descriptor;
    if (lower(o.group) == lower(d.group) && lower(o.kind) == lower(d.kind) && o.version == d.version)
      return fail(fmt::format("framework \"{}\" ({}): {}/{} {} is already served by \"{}\" ({})", d.name, origin,
                              d.group, d.version, d.kind, o.name, other.origin));
  }
  for (const auto& other : registrations_) {
    const auto& o = other.descriptor;
    if (lower(o.group) == lower(d.group) && o.plural == d.plural && o.kind != d.kind)
      return fail(fmt::format("framework \"{}\" ({}): resource {}.{} is already the kind {} of \"{}\" ({})", d.name, origin,
                              d.plural, d.group, o.kind, o.name, other.origin));
  }
  registrations_.push_back(std::move(registration));
  return {};
}

const Registration* Registry::find(std::string_view name) const {
  auto r = lookup(name);
  return r ? *r : nullptr;
}

std::vector<std::string> Registry::accepted_names() const {
  std::set<std::string> names;
  for (const auto& r : registrations_) {
    for (const auto& s : own_spellings(r.descriptor)) names.insert(s);
    names.insert(lower(r.descriptor.kind));
  }
  return {names.begin(), names.end()};
}

Result<const Registration*> Registry::lookup(std::string_view spelling) const {
  const std::string key = lower(spelling);
  for (const auto& r : registrations_) {
    const auto own = own_spellings(r.descriptor);
    if (std::find(own.begin(), own.end(), key) != own.end()) return &r;
  }
  std::vector<const Registration*> by_kind;
  for (const auto& r : registrations_)
    if (lower(r.descriptor.kind) == key) by_kind.push_back(&r);
  if (by_kind.empty())
    return fail(fmt::format("scheme \"{}\" is not supported; valid names: {}", spelling,
                            fmt::join(accepted_names(), ", ")));
  if (by_kind.size() == 1) return by_kind.front();
  const Registration* chosen = nullptr;
  for (const auto* r : by_kind) {
    if (!r->descriptor.kind_alias_default) continue;
    if (chosen) {
      chosen = nullptr;
      break;
    }
    chosen = r;
  }
  if (chosen) return chosen;
  std::vector<std::string> names;
  for (const auto* r : by_kind) names.push_back(r->descriptor.name);
  return fail(fmt::format("scheme \"{}\" is ambiguous: it names {}; use one of those names", spelling,
                          fmt::join(names, " and ")));
}

Result<std::vector<std::string>> Registry::resolve(const std::vector<std::string>& values) const {
  std::vector<std::pair<bool, std::string>> items;  // (remove?, spelling)
  for (const auto& value : values) {
    size_t pos = 0;
    while (pos <= value.size()) {
      const size_t comma = value.find(',', pos);
      std::string item = trim(std::string_view(value).substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
      pos = comma == std::string::npos ? value.size() + 1 : comma + 1;
      if (item.empty()) continue;
      const bool remove = item.front() == '-';
      if (remove) item = trim(std::string_view(item).substr(1));
      if (item.empty()) return fail("--enable-scheme: \"-\" must be followed by a framework name");
      items.emplace_back(remove, std::move(item));
    }
  }

  std::set<const Registration*> enabled;
  const bool only_removals =
      std::all_of(items.begin(), items.end(), [](const auto& item) { return item.first; });
  if (only_removals)
    for (const auto& r : registrations_) enabled.insert(&r);

  for (const auto& [remove, spelling] : items) {
    if (spelling == "*") {
      if (remove) {
        enabled.clear();
      } else {
        for (const auto& r : registrations_) enabled.insert(&r);
      }
      continue;
    }
    auto r = lookup(spelling);
    if (!r) return fail(fmt::format("--enable-scheme: {}", r.error().message));
    if (remove) enabled.erase(*r);
    else enabled.insert(*r);
  }

  std::vector<std::string> out;
  for (const auto& r : registrations_)
    if (enabled.count(&r)) out.push_back(r.descriptor.name);
  return out;
}

Result<std::unique_ptr<FrameworkPlugin>> Registry::instantiate(std::string_view name, PluginConfig config) const {
  auto r = lookup(name);
  if (!r) return fail(r.error().message);
  for (const auto& option : (*r)->options) config.options.try_emplace(option.name, option.default_value);
  auto plugin = (*r)->factory(config);
  if (!plugin) return fail(fmt::format("framework \"{}\" ({}): {}", (*r)->descriptor.name, (*r)->origin, plugin.error().message));
  if (!*plugin) return fail(fmt::format("framework \"{}\" ({}): its factory returned no plugin", (*r)->descriptor.name, (*r)->origin));
  // The core's pod pipeline creates pods: a kind that runs it must let the caches watch them.
  if (!(*r)->descriptor.core_children.pods && (*plugin)->capabilities().workloads == nullptr)
    return fail(fmt::format("framework \"{}\" ({}): its descriptor's core_children leaves out pods, but only a "
                            "WorkloadPlanner runs without the core's pods",
                            (*r)->descriptor.name, (*r)->origin));
  return std::move(*plugin);
}

Status Registry::add_conversion(ConversionRegistration registration) {
  if (registration.convert == nullptr)
    return fail(fmt::format("conversion for {}.{}: no convert function", registration.kind, registration.group));
  if (find_conversion(registration.group, registration.kind) != nullptr)
    return fail(fmt::format("conversion for {}.{} is already registered", registration.kind, registration.group));
  conversions_.push_back(std::move(registration));
  return {};
}

const ConversionRegistration* Registry::find_conversion(std::string_view group, std::string_view kind) const {
  for (const auto& c : conversions_)
    if (c.group == group && c.kind == kind) return &c;
  return nullptr;
}

bool Registry::owns_unset_managed_by(std::string_view name, const std::vector<std::string>& enabled,
                                     const EnablementOptions& options) const {
  const Registration* self = find(name);
  if (self == nullptr) return false;
  const auto& d = self->descriptor;
  bool shared = false;
  for (const auto& other_name : enabled) {
    const Registration* other = find(other_name);
    if (other != nullptr && other != self && other->descriptor.group == d.group && other->descriptor.kind == d.kind)
      shared = true;
  }
  if (!shared) return d.owns_unset_managed_by;
  if (auto it = options.default_version.find(lower(d.kind)); it != options.default_version.end())
    return it->second == d.version;
  return d.kind_alias_default;
}

Result<Registration> module_registration(RegisterFunction register_module, const std::vector<std::string_view>& crds) {
  Registry registry;
  if (auto s = register_module(registry); !s) return fail(fmt::format("registering the framework failed: {}", s.error().message));
  if (registry.all().size() != 1)
    return fail(fmt::format("a module serves exactly one framework; its register function added {}", registry.all().size()));
  Registration r = registry.all().front();
  for (auto crd : crds) r.crds.emplace_back(crd);
  return r;
}

bool Registry::kind_shared(std::string_view name) const {
  const Registration* self = find(name);
  if (self == nullptr) return false;
  for (const auto& r : registrations_)
    if (&r != self && r.descriptor.group == self->descriptor.group && r.descriptor.kind == self->descriptor.kind) return true;
  return false;
}

}  // namespace unitrain::framework
