// The options of a request from its query parameters (and, for deletes, its DeleteOptions body):
// metav1 ListOptions, WatchOptions, DeleteOptions and dryRun, decoded and validated as
// kube-apiserver does it. A parameter that does not parse is a 400 with Go's strconv message
// (`strconv.ParseInt: parsing "abc": invalid syntax`), as its parameter codec answers; options
// that parse but do not go together are a 422 `ListOptions.meta.k8s.io "" is invalid: ...`.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "localcluster/http_message.h"
#include "localcluster/store.h"
#include "localcluster/table.h"

namespace unitrain::localcluster {

StoreResult<ListRequest> list_request(const Query& q);
// A watch of one object (`name` not empty) is a watch with a metadata.name field selector.
StoreResult<WatchRequest> watch_request(const Query& q, std::string_view name);
// timeoutSeconds, when given (negative counts as 0, more than kMaxWatchTimeout as that: the server
// adds it to now for the watch's deadline, which must not overflow).
inline constexpr std::chrono::seconds kMaxWatchTimeout = std::chrono::hours(24 * 365);
StoreResult<std::optional<std::chrono::seconds>> watch_timeout(const Query& q);
// Query parameters, overridden by a DeleteOptions body when one is sent.
StoreResult<DeleteRequest> delete_request(const Query& q, std::string_view body);
// dryRun=All; any other value is refused as kube-apiserver refuses it (`kind` names the options:
// "CreateOptions", "UpdateOptions", "PatchOptions", "DeleteOptions").
StoreResult<bool> dry_run(const Query& q, std::string_view kind);
// fieldValidation must be empty, Ignore, Warn or Strict.
StoreResult<void> check_field_validation(const Query& q, std::string_view kind);
// includeObject of a Table request (Metadata when absent).
IncludeObject include_object(const Query& q);
// An integer query parameter as Go's strconv.ParseInt(s, 10, 64) reads it; nullopt when absent.
StoreResult<std::optional<int64_t>> query_int64(const Query& q, std::string_view key);

}  // namespace unitrain::localcluster
