// The options of a request from its query parameters (and, for deletes, its DeleteOptions body):
// metav1 ListOptions, WatchOptions, DeleteOptions and dryRun, as kube-apiserver reads them.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "localcluster/http_message.h"
#include "localcluster/store.h"
#include "localcluster/table.h"

namespace unitrain::localcluster {

ListRequest list_request(const Query& q);
// A watch of one object (`name` not empty) is a watch with a metadata.name field selector.
WatchRequest watch_request(const Query& q, std::string_view name);
// timeoutSeconds, when given (negative counts as 0).
std::optional<std::chrono::seconds> watch_timeout(const Query& q);
// Query parameters, overridden by a DeleteOptions body when one is sent.
StoreResult<DeleteRequest> delete_request(const Query& q, std::string_view body);
bool dry_run(const Query& q);  // dryRun=All
// includeObject of a Table request (Metadata when absent).
IncludeObject include_object(const Query& q);

}  // namespace unitrain::localcluster
