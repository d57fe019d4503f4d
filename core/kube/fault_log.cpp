#include "core/kube/fault_log.h"

#include <algorithm>

#include <fmt/format.h>

namespace unitrain::kube {

namespace {

std::string group_version(const GroupVersionResource& r) { return r.group.empty() ? r.version : r.group + "/" + r.version; }

std::string required_key(const GroupVersionResource& r) { return r.group_resource() + "/" + r.version; }

// A transport message names the request it failed in ("GET /api/v1/pods: no complete response
// within 30000ms"); the cause is the same for every request, so the key leaves the request out.
std::string_view without_request(std::string_view message) {
  for (std::string_view method : {"GET ", "POST ", "PUT ", "PATCH ", "DELETE ", "HEAD "}) {
    if (!message.starts_with(method)) continue;
    const size_t colon = message.find(": ");
    return colon == std::string_view::npos ? message : message.substr(colon + 2);
  }
  return message;
}

bool expected_outcome(const ApiCall& call, const ApiError& e) {
  using R = ApiError::Reason;
  if (e.is(R::Conflict) || e.is(R::Cancelled)) return true;
  if (e.is(R::AlreadyExists) && call.verb == "create") return true;
  if (e.is(R::NotFound) && !call.name.empty() && call.verb != "create") return true;
  if ((e.is(R::Gone) || e.is(R::Expired) || e.code == 410) && call.read()) return true;
  return false;
}

}  // namespace

std::string describe(const ApiCall& call) {
  std::string out = fmt::format("{} {}", call.verb, call.resource.group_resource());
  if (!call.name.empty()) {
    out += call.ns.empty() ? fmt::format(" {}", call.name) : fmt::format(" {}/{}", call.ns, call.name);
  } else if (call.read()) {
    out += call.ns.empty() ? " in all namespaces" : fmt::format(" in namespace {}", call.ns);
  } else if (!call.ns.empty()) {
    out += fmt::format(" in namespace {}", call.ns);
  }
  if (!call.subresource.empty()) out += fmt::format(" ({})", call.subresource);
  return out;
}

std::string describe_credentials(const RestConfig& c) {
  if (!c.bearer_token_file.empty()) return fmt::format("the bearer token in {}", c.bearer_token_file);
  if (!c.bearer_token.empty()) return "the kubeconfig's bearer token";
  if (!c.client_cert_pem.empty()) return "the kubeconfig's client certificate";
  return "no credentials (anonymous)";
}

Fault classify_connection(std::string_view message, const ApiServerAccess& access) {
  return {fmt::format("connection:{}", without_request(message)),
          fmt::format("request to the API server at {} failed: {}", access.server_url, message)};
}

std::optional<Fault> classify(const ApiCall& call, const ApiError& e, const ApiServerAccess& access,
                              const RequiredResource* required) {
  using R = ApiError::Reason;
  if (expected_outcome(call, e)) return std::nullopt;
  const std::string resource = call.resource.group_resource();
  if (e.is(R::Transport)) return classify_connection(e.message, access);
  if (e.is(R::Unauthorized) || e.code == 401) {
    return Fault{"401", fmt::format("the API server at {} rejected this client's credentials ({}): {}", access.server_url,
                                    access.credentials, e.to_string())};
  }
  if (e.is(R::Forbidden) || e.code == 403) {
    return Fault{fmt::format("403:{}:{}", call.verb, resource),
                 fmt::format("{} {} is forbidden for {}: {}", call.verb, resource, access.credentials, e.to_string())};
  }
  if ((e.is(R::NotFound) || e.code == 404) && call.read()) {
    const std::string served = fmt::format("the API server does not serve {} in {}", resource, group_version(call.resource));
    if (required != nullptr) {
      return Fault{fmt::format("404:{}", required_key(call.resource)),
                   fmt::format("{} is not installed ({}); {}", required->what, served, required->install)};
    }
    return Fault{fmt::format("404:{}", required_key(call.resource)),
                 fmt::format("{} (is its CustomResourceDefinition installed?)", served)};
  }
  return Fault{fmt::format("{}:{}:{}:{}", e.code, static_cast<int>(e.reason), call.verb, resource), e.to_string()};
}

// ---- FaultLog -----------------------------------------------------------------------------------

FaultLog::FaultLog(Clock& clock, ApiServerAccess access, std::chrono::seconds interval)
    : clock_(clock), access_(std::move(access)), throttle_(interval) {}

void FaultLog::require(const GroupVersionResource& resource, RequiredResource required) {
  std::lock_guard lock(mu_);
  required_[required_key(resource)] = std::move(required);
}

void FaultLog::report(const Fault& fault, std::string_view what, const log::Fields& fields) {
  auto report = throttle_.occur(fault.key, clock_.steady_now());
  if (!report) return;
  log::write(log::Level::error, fmt::format("{} failed: {}{}", what, fault.cause, report->suffix()), fields);
}

void FaultLog::failed(const std::string& source, const log::Fields& fields, const ApiCall& call, const ApiError& e) {
  std::optional<Fault> fault;
  {
    std::lock_guard lock(mu_);
    auto it = required_.find(required_key(call.resource));
    fault = classify(call, e, access_, it == required_.end() ? nullptr : &it->second);
  }
  const std::string what = describe(call);
  if (!fault) {
    if (log::enabled(log::Level::debug)) log::write(log::Level::debug, fmt::format("{}: {}", what, e.to_string()), fields);
    return;
  }
  if (call.read()) {
    std::lock_guard lock(mu_);
    reads_[source][fmt::format("{} {} {}", call.verb, call.resource.group_resource(), call.ns)] =
        ReadFault{fault->key, fault->cause, what};
  }
  report(*fault, what, fields);
}

bool FaultLog::key_in_use_locked(const std::string& key) const {
  if (connection_ && connection_->key == key) return true;
  for (const auto& [_, faults] : reads_)
    for (const auto& [__, f] : faults)
      if (f.key == key) return true;
  return false;
}

void FaultLog::succeeded(const std::string& source, const log::Fields& fields, const ApiCall& call) {
  if (!call.read()) return;
  std::optional<ReadFault> recovered;
  {
    std::lock_guard lock(mu_);
    auto s = reads_.find(source);
    if (s == reads_.end()) return;
    auto it = s->second.find(fmt::format("{} {} {}", call.verb, call.resource.group_resource(), call.ns));
    if (it == s->second.end()) return;
    recovered = std::move(it->second);
    s->second.erase(it);
    if (s->second.empty()) reads_.erase(s);
    if (key_in_use_locked(recovered->key)) return;
  }
  throttle_.clear(recovered->key);
  log::write(log::Level::info, fmt::format("{} works again", recovered->what), fields);
}

void FaultLog::connection_failed(std::string_view message) {
  Fault fault = classify_connection(message, access_);
  {
    std::lock_guard lock(mu_);
    connection_ = fault;
  }
  if (auto report = throttle_.occur(fault.key, clock_.steady_now()))
    log::write(log::Level::error, fault.cause + report->suffix());
}

void FaultLog::connection_ok() {
  std::optional<Fault> was;
  {
    std::lock_guard lock(mu_);
    if (!connection_) return;
    was = std::move(connection_);
    connection_.reset();
    if (key_in_use_locked(was->key)) return;
  }
  throttle_.clear(was->key);
  log::write(log::Level::info, fmt::format("the API server at {} answers again", access_.server_url));
}

std::vector<std::string> FaultLog::causes(const std::string& source) const {
  std::vector<std::string> out;
  std::lock_guard lock(mu_);
  if (connection_) out.push_back(connection_->cause);
  if (auto it = reads_.find(source); it != reads_.end()) {
    for (const auto& [_, f] : it->second)
      if (std::find(out.begin(), out.end(), f.cause) == out.end()) out.push_back(f.cause);
  }
  return out;
}

// ---- ReportingClient ----------------------------------------------------------------------------

template <class T>
ApiResult<T> ReportingClient::outcome(const ApiCall& call, ApiResult<T> result) {
  if (result) faults_.succeeded(source_, fields_, call);
  else faults_.failed(source_, fields_, call, result.error());
  return result;
}

namespace {
std::string_view name_of(const json::Value& obj) { return json::get_string(obj, "/metadata/name").value_or(""); }
std::string_view namespace_or(std::string_view ns, const json::Value& obj) {
  return ns.empty() ? json::get_string(obj, "/metadata/namespace").value_or("") : ns;
}
}  // namespace

ApiResult<json::Document> ReportingClient::get(const GroupVersionResource& r, std::string_view ns, std::string_view name) {
  return outcome(ApiCall{"get", r, ns, name}, inner_.get(r, ns, name));
}
ApiResult<json::Document> ReportingClient::list(const GroupVersionResource& r, std::string_view ns, const ListOptions& o) {
  return outcome(ApiCall{"list", r, ns}, inner_.list(r, ns, o));
}
ApiResult<json::Document> ReportingClient::create(const GroupVersionResource& r, std::string_view ns,
                                                  const json::Value& obj, const WriteOptions& opts) {
  return outcome(ApiCall{"create", r, namespace_or(ns, obj)}, inner_.create(r, ns, obj, opts));
}
std::vector<CreateOutcome> ReportingClient::create_all(const GroupVersionResource& r,
                                                       std::span<const json::Document> objects, const WriteOptions& opts) {
  auto out = inner_.create_all(r, objects, opts);
  for (size_t i = 0; i < out.size(); ++i)
    out[i].result = outcome(ApiCall{"create", r, namespace_or({}, objects[i].root())}, std::move(out[i].result));
  return out;
}
ApiResult<json::Document> ReportingClient::update(const GroupVersionResource& r, std::string_view ns,
                                                  const json::Value& obj, const WriteOptions& opts) {
  return outcome(ApiCall{"update", r, namespace_or(ns, obj), name_of(obj)}, inner_.update(r, ns, obj, opts));
}
ApiResult<json::Document> ReportingClient::update_status(const GroupVersionResource& r, std::string_view ns,
                                                         const json::Value& obj, const WriteOptions& opts) {
  return outcome(ApiCall{"update", r, namespace_or(ns, obj), name_of(obj), "status"},
                 inner_.update_status(r, ns, obj, opts));
}
ApiResult<json::Document> ReportingClient::patch(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                                 PatchType type, std::string_view body, const PatchOptions& opts,
                                                 std::string_view subresource) {
  return outcome(ApiCall{"patch", r, ns, name, subresource}, inner_.patch(r, ns, name, type, body, opts, subresource));
}
ApiResult<json::Document> ReportingClient::remove(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                                  const DeleteOptions& opts) {
  return outcome(ApiCall{"delete", r, ns, name}, inner_.remove(r, ns, name, opts));
}
ApiResult<json::Document> ReportingClient::delete_collection(const GroupVersionResource& r, std::string_view ns,
                                                             const ListOptions& selector, const DeleteOptions& opts) {
  return outcome(ApiCall{"deletecollection", r, ns}, inner_.delete_collection(r, ns, selector, opts));
}
ApiResult<std::unique_ptr<WatchStream>> ReportingClient::watch(const GroupVersionResource& r, std::string_view ns,
                                                               const WatchOptions& opts) {
  return outcome(ApiCall{"watch", r, ns}, inner_.watch(r, ns, opts));
}

}  // namespace unitrain::kube
