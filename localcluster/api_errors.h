// Failures as kube-apiserver reports them: metav1.Status bodies with its reasons, codes and
// exact wording, so clients (kubectl, client-go's apierrors.IsNotFound and friends) react as
// they would to a real cluster.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"
#include "localcluster/resource_info.h"
#include "localcluster/schema.h"

namespace unitrain::localcluster {

// A failure as the API server reports it; becomes a metav1.Status body.
struct StatusError {
  int code = 500;
  std::string reason;   // "NotFound", "AlreadyExists", "Conflict", "Invalid", "Gone", ...
  std::string message;  // exactly as kube-apiserver words it
  json::Document details;  // metav1.StatusDetails (name, group, kind, causes), or null
  std::string continue_token;  // metadata.continue: where an expired list may go on (inconsistently)
  json::Document to_status() const;  // the full metav1.Status object
};

template <class T>
using StoreResult = Result<T, StatusError>;

// "pods", "jobs.batch": how kube-apiserver names a resource in error messages.
std::string qualified_resource(const ResourceInfo& r);
// "Pod", "Job.batch", "PyTorchJob.kubeflow.org": how it names a kind in Invalid errors.
std::string qualified_kind(const ResourceInfo& r);
// "group/version, Kind=Kind" (schema.GroupVersionKind's String()), as webhook errors name kinds.
std::string group_version_kind_text(std::string_view api_version, std::string_view kind);

namespace errors {
// Any code and reason, without details.
StatusError status(int code, std::string reason, std::string message);
StatusError not_found(const ResourceInfo& r, std::string_view name);
// `namespaces "x" not found` for a missing namespace.
StatusError namespace_not_found(std::string_view ns);
StatusError resource_not_found();  // the path or resource is not (or no longer) served
StatusError already_exists(const ResourceInfo& r, std::string_view name);
// `Operation cannot be fulfilled on <resource> "<name>": <detail>`.
StatusError conflict(const ResourceInfo& r, std::string_view name, std::string_view detail);
StatusError stale_resource_version(const ResourceInfo& r, std::string_view name);
// `<Kind> "<name>" is invalid: <errors>` with details.causes.
StatusError invalid(const ResourceInfo& r, std::string_view name, const std::vector<FieldError>& errs);
StatusError forbidden(const ResourceInfo& r, std::string_view name, std::string_view detail);
StatusError bad_request(std::string message);
// 400 for a body naming another object than the URL, or another namespace.
StatusError name_mismatch(std::string_view body_name, std::string_view url_name);
StatusError namespace_mismatch();
StatusError unauthorized();
StatusError method_not_allowed();
StatusError expired(std::string message);  // 410, reason Expired (what the watch cache sends)
StatusError gone(std::string message);     // 410, reason Gone
// 410 for a continue token older than the store's history, carrying a token that continues the
// list at the current state (kube-apiserver's answer once etcd compacted the token's revision).
StatusError continue_expired(std::string inconsistent_continue_token);
StatusError unsupported_media_type(std::string message);
// 406 for a client that accepts only representations the local cluster does not produce.
StatusError not_acceptable_json();
StatusError too_large_resource_version(uint64_t requested, uint64_t current);
StatusError internal(std::string message);
// 413 `Request entity too large: limit is N` for a body over the server's limit.
StatusError request_entity_too_large(uint64_t limit);
// `Internal error occurred: <cause>` with the cause in details.causes (apierrors.NewInternalError).
StatusError internal_error_occurred(const std::string& cause);
}  // namespace errors

}  // namespace unitrain::localcluster
