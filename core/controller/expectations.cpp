#include "core/controller/expectations.h"

#include <fmt/format.h>

namespace unitrain::controller {

void Expectations::set(std::string_view key, int64_t adds, int64_t deletes) {
  std::lock_guard lock(mu_);
  records_.insert_or_assign(std::string(key), Record{adds, deletes, clock_.steady_now()});
}

void Expectations::raise(std::string_view key, int64_t adds, int64_t deletes) {
  std::lock_guard lock(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) it = records_.emplace(std::string(key), Record{}).first;
  it->second.adds += adds;
  it->second.deletes += deletes;
  it->second.recorded = clock_.steady_now();
}

void Expectations::lower(std::string_view key, int64_t adds, int64_t deletes) {
  std::lock_guard lock(mu_);
  auto it = records_.find(key);
  // Observations of objects we never expected (someone else's writes, a restart) change nothing.
  if (it == records_.end()) return;
  it->second.adds -= adds;
  it->second.deletes -= deletes;
}

bool Expectations::satisfied(std::string_view key) const {
  std::lock_guard lock(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return true;
  const Record& r = it->second;
  if (r.adds <= 0 && r.deletes <= 0) return true;
  return clock_.steady_now() - r.recorded > kTimeout;
}

void Expectations::forget(std::string_view key) {
  std::lock_guard lock(mu_);
  if (auto it = records_.find(key); it != records_.end()) records_.erase(it);
}

void Expectations::forget_prefix(std::string_view prefix) {
  std::lock_guard lock(mu_);
  auto it = records_.lower_bound(prefix);
  while (it != records_.end() && std::string_view(it->first).starts_with(prefix)) it = records_.erase(it);
}

Expectations::Pending Expectations::pending(std::string_view key) const {
  std::lock_guard lock(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return {};
  return {it->second.adds, it->second.deletes};
}

std::string Expectations::pods_key(std::string_view ns, std::string_view job, std::string_view rt) {
  return fmt::format("{}/{}/{}/pods", ns, job, rt);
}

std::string Expectations::services_key(std::string_view ns, std::string_view job, std::string_view rt) {
  return fmt::format("{}/{}/{}/services", ns, job, rt);
}

}  // namespace unitrain::controller
