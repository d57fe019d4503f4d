// Building blocks of the in-memory store that other local-cluster parts (the HTTP layer, the
// controllers) reuse: metav1.Status errors worded exactly as kube-apiserver words them, and the
// Kubernetes name rules.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "localcluster/schema.h"
#include "localcluster/store.h"

namespace unitrain::localcluster {

// "pods", "jobs.batch": how kube-apiserver names a resource in error messages.
std::string qualified_resource(const ResourceInfo& r);
// "Pod", "Job.batch", "PyTorchJob.kubeflow.org": how it names a kind in Invalid errors.
std::string qualified_kind(const ResourceInfo& r);

namespace errors {
StatusError not_found(const ResourceInfo& r, std::string_view name);
// `namespaces "x" not found` for a missing namespace.
StatusError namespace_not_found(std::string_view ns);
StatusError resource_not_found();  // the resource is not (or no longer) served
StatusError already_exists(const ResourceInfo& r, std::string_view name);
// `Operation cannot be fulfilled on <resource> "<name>": <detail>`.
StatusError conflict(const ResourceInfo& r, std::string_view name, std::string_view detail);
StatusError stale_resource_version(const ResourceInfo& r, std::string_view name);
// `<Kind> "<name>" is invalid: <errors>` with details.causes.
StatusError invalid(const ResourceInfo& r, std::string_view name, const std::vector<FieldError>& errs);
StatusError forbidden(const ResourceInfo& r, std::string_view name, std::string_view detail);
StatusError bad_request(std::string message);
StatusError expired(std::string message);  // 410, reason Expired (what the watch cache sends)
StatusError gone(std::string message);     // 410, reason Gone
StatusError unsupported_media_type(std::string message);
StatusError too_large_resource_version(uint64_t requested, uint64_t current);
StatusError internal(std::string message);
}  // namespace errors

// Name rules; each returns the message kube-apiserver gives, or nullopt when valid.
std::optional<std::string> check_dns1123_subdomain(std::string_view name);
std::optional<std::string> check_dns1123_label(std::string_view name);
std::optional<std::string> check_dns1035_label(std::string_view name);
std::optional<std::string> check_path_segment(std::string_view name);
// The rule kube-apiserver applies to metadata.name of resource `r`.
std::optional<std::string> check_object_name(const ResourceInfo& r, std::string_view name);

}  // namespace unitrain::localcluster
