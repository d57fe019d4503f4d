#include "core/controller/expectations.h"

#include <charconv>
#include <initializer_list>
#include <optional>

namespace unitrain::controller {

void Expectations::set(std::string_view key, int64_t adds, int64_t deletes) {
  std::lock_guard lock(mu_);
  if (adds <= 0 && deletes <= 0) {
    if (auto it = records_.find(key); it != records_.end()) records_.erase(it);
    return;
  }
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

bool Expectations::lower(std::string_view key, int64_t adds, int64_t deletes) {
  std::lock_guard lock(mu_);
  auto it = records_.find(key);
  // Observations of objects we never expected (someone else's writes, a restart) change nothing.
  if (it == records_.end()) return false;
  const bool expected = (adds > 0 && it->second.adds > 0) || (deletes > 0 && it->second.deletes > 0);
  it->second.adds -= adds;
  it->second.deletes -= deletes;
  // Fulfilled: the record goes, so the map holds only jobs with writes in flight (not every job
  // ever reconciled), and an observation beyond what was expected cannot leave a debt that would
  // satisfy a later expectation before its object is seen.
  if (it->second.adds <= 0 && it->second.deletes <= 0) records_.erase(it);
  return expected;
}

void Expectations::children_vanished(std::string_view job_key) {
  std::lock_guard lock(mu_);
  if (vanished_.find(job_key) == vanished_.end()) vanished_.emplace(job_key);
}

bool Expectations::vanished(std::string_view job_key) const {
  std::lock_guard lock(mu_);
  return vanished_.find(job_key) != vanished_.end();
}

void Expectations::clear_vanished(std::string_view job_key) {
  std::lock_guard lock(mu_);
  if (auto it = vanished_.find(job_key); it != vanished_.end()) vanished_.erase(it);
}

bool Expectations::satisfied(std::string_view key) const {
  std::lock_guard lock(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return true;
  const Record& r = it->second;
  if (r.adds <= 0 && r.deletes <= 0) return true;
  return clock_.steady_now() - r.recorded > kTimeout;
}

namespace {

std::optional<uint64_t> as_number(std::string_view rv) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), n);
  if (ec != std::errc() || end != rv.data() + rv.size() || rv.empty()) return std::nullopt;
  return n;
}

}  // namespace

void Expectations::expect_version(std::string_view key, std::string_view resource_version) {
  std::lock_guard lock(mu_);
  versions_.insert_or_assign(std::string(key), Version{std::string(resource_version), clock_.steady_now()});
}

bool Expectations::version_seen(std::string_view key, std::string_view resource_version) {
  std::lock_guard lock(mu_);
  auto it = versions_.find(key);
  if (it == versions_.end()) return true;
  bool seen = it->second.resource_version == resource_version;
  // resourceVersions are etcd revisions (the API server, the local cluster and the fake client
  // all hand out one increasing counter): a later write by someone else also includes ours.
  // Anything else compares only for equality; the timeout keeps a job from waiting forever.
  if (!seen) {
    auto want = as_number(it->second.resource_version), have = as_number(resource_version);
    seen = want && have && *have >= *want;
  }
  if (!seen && clock_.steady_now() - it->second.recorded > kTimeout) seen = true;
  if (seen) versions_.erase(it);
  return seen;
}

void Expectations::forget(std::string_view key) {
  std::lock_guard lock(mu_);
  if (auto it = records_.find(key); it != records_.end()) records_.erase(it);
  if (auto it = versions_.find(key); it != versions_.end()) versions_.erase(it);
  if (auto it = vanished_.find(key); it != vanished_.end()) vanished_.erase(it);
}

void Expectations::forget_prefix(std::string_view prefix) {
  std::lock_guard lock(mu_);
  auto it = records_.lower_bound(prefix);
  while (it != records_.end() && std::string_view(it->first).starts_with(prefix)) it = records_.erase(it);
  auto vit = versions_.lower_bound(prefix);
  while (vit != versions_.end() && std::string_view(vit->first).starts_with(prefix)) vit = versions_.erase(vit);
  auto mit = vanished_.lower_bound(prefix);
  while (mit != vanished_.end() && std::string_view(*mit).starts_with(prefix)) mit = vanished_.erase(mit);
}

size_t Expectations::size() const {
  std::lock_guard lock(mu_);
  return records_.size() + versions_.size() + vanished_.size();
}

Expectations::Pending Expectations::pending(std::string_view key) const {
  std::lock_guard lock(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return {};
  return {it->second.adds, it->second.deletes};
}

namespace {

// The keys are built on every pass (several per pass, and per child event): joined in one
// allocation rather than through fmt's format-string parse.
std::string joined(std::initializer_list<std::string_view> parts) {
  size_t size = 0;
  for (auto p : parts) size += p.size();
  std::string out;
  out.reserve(size);
  for (auto p : parts) out.append(p);
  return out;
}

}  // namespace

std::string Expectations::pods_key(std::string_view ns, std::string_view job, std::string_view rt) {
  return joined({ns, "/", job, "/", rt, "/pods"});
}

std::string Expectations::job_key(std::string_view ns, std::string_view job) { return joined({ns, "/", job, "/job"}); }

std::string Expectations::services_key(std::string_view ns, std::string_view job, std::string_view rt) {
  return joined({ns, "/", job, "/", rt, "/services"});
}

}  // namespace unitrain::controller
